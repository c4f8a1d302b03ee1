package cqs.clients;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.util.VersionInfo;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.*;

/**
 * The SQS calls the scenario makes, over the SDK v2's sync client or its async client: one
 * interface whose methods have SqsClient's names and types, answered by the sync client as it
 * is, or by the async client's same-named method with the future awaited. The async client is
 * also handed out as it is, for the step that keeps several long polls in flight at once.
 */
public interface V2 {
  CreateQueueResponse createQueue(CreateQueueRequest request);

  GetQueueUrlResponse getQueueUrl(GetQueueUrlRequest request);

  GetQueueAttributesResponse getQueueAttributes(GetQueueAttributesRequest request);

  SetQueueAttributesResponse setQueueAttributes(SetQueueAttributesRequest request);

  SendMessageResponse sendMessage(SendMessageRequest request);

  SendMessageBatchResponse sendMessageBatch(SendMessageBatchRequest request);

  ReceiveMessageResponse receiveMessage(ReceiveMessageRequest request);

  DeleteMessageResponse deleteMessage(DeleteMessageRequest request);

  DeleteMessageBatchResponse deleteMessageBatch(DeleteMessageBatchRequest request);

  ChangeMessageVisibilityResponse changeMessageVisibility(ChangeMessageVisibilityRequest request);

  TagQueueResponse tagQueue(TagQueueRequest request);

  UntagQueueResponse untagQueue(UntagQueueRequest request);

  ListQueueTagsResponse listQueueTags(ListQueueTagsRequest request);

  ListQueuesResponse listQueues(ListQueuesRequest request);

  PurgeQueueResponse purgeQueue(PurgeQueueRequest request);

  DeleteQueueResponse deleteQueue(DeleteQueueRequest request);

  /** The async client behind this, or null for the sync one. */
  SqsAsyncClient asyncClient();

  /** The SDK's version and the protocol its requests were sent in (from their Content-Type). */
  Map<String, Object> describe();

  /** Records the Content-Type of the requests the SDK sends: which protocol it speaks. */
  final class WireProtocol implements ExecutionInterceptor {
    final Map<String, Boolean> contentTypes = new ConcurrentHashMap<>();

    @Override
    public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
      context.httpRequest().firstMatchingHeader("Content-Type")
          .ifPresent(type -> contentTypes.put(type, true));
    }

    String protocol() {
      if (contentTypes.keySet().stream().allMatch(type -> type.startsWith("application/x-amz-json-1.0"))) {
        return contentTypes.isEmpty() ? "none" : "json";
      }
      return String.join(",", contentTypes.keySet());
    }
  }

  static ClientOverrideConfiguration overrides(WireProtocol wire) {
    return ClientOverrideConfiguration.builder()
        .retryStrategy(AwsRetryStrategy.doNotRetry())
        .addExecutionInterceptor(wire)
        .build();
  }

  static StaticCredentialsProvider credentials() {
    return StaticCredentialsProvider.create(AwsBasicCredentials.create("x", "x"));
  }

  static V2 sync(Map<String, Object> plan, Main.Report report) {
    WireProtocol wire = new WireProtocol();
    SqsClient client = SqsClient.builder()
        .endpointOverride(URI.create((String) plan.get("endpoint")))
        .region(Region.of((String) plan.get("region")))
        .credentialsProvider(credentials())
        .httpClientBuilder(ApacheHttpClient.builder().socketTimeout(Duration.ofSeconds(40)))
        .overrideConfiguration(overrides(wire))
        .build();
    return proxy((method, args) -> {
      Method target = SqsClient.class.getMethod(method.getName(), method.getParameterTypes());
      return target.invoke(client, args);
    }, null, wire);
  }

  static V2 async(Map<String, Object> plan, Main.Report report) {
    WireProtocol wire = new WireProtocol();
    SqsAsyncClient client = SqsAsyncClient.builder()
        .endpointOverride(URI.create((String) plan.get("endpoint")))
        .region(Region.of((String) plan.get("region")))
        .credentialsProvider(credentials())
        .httpClientBuilder(NettyNioAsyncHttpClient.builder().readTimeout(Duration.ofSeconds(40)))
        .overrideConfiguration(overrides(wire))
        .build();
    return proxy((method, args) -> {
      Method target = SqsAsyncClient.class.getMethod(method.getName(), method.getParameterTypes());
      return ((CompletableFuture<?>) target.invoke(client, args)).join();
    }, client, wire);
  }

  /** A call of one of the SQS methods above. */
  @FunctionalInterface
  interface Call {
    Object invoke(Method method, Object[] args) throws Exception;
  }

  private static V2 proxy(Call call, SqsAsyncClient async, WireProtocol wire) {
    return (V2) Proxy.newProxyInstance(V2.class.getClassLoader(), new Class<?>[] {V2.class},
        (self, method, args) -> switch (method.getName()) {
          case "asyncClient" -> async;
          case "describe" -> Map.of("version", VersionInfo.SDK_VERSION, "protocol", wire.protocol());
          case "toString" -> "V2(" + (async == null ? "sync" : "async") + ")";
          default -> {
            try {
              yield call.invoke(method, args);
            } catch (Throwable error) {
              throw Errors.unwrap(error);
            }
          }
        });
  }
}
