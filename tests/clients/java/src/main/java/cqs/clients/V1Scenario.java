package cqs.clients;

import com.amazonaws.AmazonServiceException;
import com.amazonaws.ClientConfiguration;
import com.amazonaws.Request;
import com.amazonaws.auth.AWSStaticCredentialsProvider;
import com.amazonaws.auth.BasicAWSCredentials;
import com.amazonaws.client.builder.AwsClientBuilder.EndpointConfiguration;
import com.amazonaws.handlers.RequestHandler2;
import com.amazonaws.services.sqs.AmazonSQS;
import com.amazonaws.services.sqs.AmazonSQSClientBuilder;
import com.amazonaws.services.sqs.model.*;
import com.amazonaws.util.VersionInfoUtils;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The scenario of tests/clients/scenario.py through the AWS SDK for Java v1, step for step as
 * tests/clients/python_driver.py runs it; the protocol it speaks is observed on its requests
 * (its newest 1.12 releases send SQS requests in AWS JSON 1.0). Judges nothing.
 */
final class V1Scenario {
  private final Map<String, Object> plan;
  private final Main.Report report;
  private final Map<String, Boolean> protocols = new ConcurrentHashMap<>();
  private final AmazonSQS sqs;
  private String standard = "";
  private String fifo = "";
  private List<String> handles = new ArrayList<>();

  V1Scenario(Map<String, Object> plan, Main.Report report) {
    this.plan = plan;
    this.report = report;
    this.sqs = AmazonSQSClientBuilder.standard()
        .withEndpointConfiguration(new EndpointConfiguration(text("endpoint"), text("region")))
        .withCredentials(new AWSStaticCredentialsProvider(new BasicAWSCredentials("x", "x")))
        .withClientConfiguration(new ClientConfiguration().withMaxErrorRetry(0).withSocketTimeout(40_000))
        .withRequestHandlers(new RequestHandler2() {
          @Override
          public void beforeRequest(Request<?> request) {
            // JSON 1.0 names its action in X-Amz-Target; the query protocol in a form parameter.
            String target = request.getHeaders().get("X-Amz-Target");
            String type = String.valueOf(request.getHeaders().get("Content-Type"));
            protocols.put(target != null && type.startsWith("application/x-amz-json-1.0") ? "json"
                : request.getParameters().containsKey("Action") ? "query" : "other: " + type, true);
          }
        })
        .build();
  }

  void run() {
    report.step("create", this::create);
    report.step("send", this::send);
    report.step("delete", this::delete);
    report.step("send_batch", this::sendBatch);
    report.step("receive_all", this::receiveAll);
    report.step("delete_batch", this::deleteBatch);
    report.step("long_poll", this::longPoll);
    report.step("change_visibility", this::changeVisibility);
    report.step("fifo", this::fifoOrder);
    report.step("attributes", this::attributes);
    report.step("tags", this::tags);
    report.step("list_paging", this::listPaging);
    report.step("purge", this::purge);
    report.step("delete_queue", this::deleteQueue);
    report.step("client", () -> Map.of("version", VersionInfoUtils.getVersion(),
        "protocol", String.join(",", protocols.keySet())));
    sqs.shutdown();
  }

  private String text(String key) {
    return (String) plan.get(key);
  }

  private int number(String key) {
    return ((Number) plan.get(key)).intValue();
  }

  private List<Integer> counts(String url) {
    Map<String, String> got = sqs.getQueueAttributes(new GetQueueAttributesRequest(url)
        .withAttributeNames("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")).getAttributes();
    return List.of(Integer.parseInt(got.get("ApproximateNumberOfMessages")),
        Integer.parseInt(got.get("ApproximateNumberOfMessagesNotVisible")));
  }

  private static List<String> bodies(List<Message> messages) {
    return messages.stream().map(Message::getBody).toList();
  }

  private Map<String, Object> create() {
    standard = sqs.createQueue(text("standard")).getQueueUrl();
    fifo = sqs.createQueue(new CreateQueueRequest(text("fifo"))
        .addAttributesEntry("FifoQueue", "true").addAttributesEntry("ContentBasedDeduplication", "true")).getQueueUrl();
    Map<String, String> fifoAttributes = sqs.getQueueAttributes(new GetQueueAttributesRequest(fifo)
        .withAttributeNames("All")).getAttributes();
    return Map.of("standard_url", standard, "fifo_url", fifo, "fifo_attributes", fifoAttributes);
  }

  @SuppressWarnings("unchecked")
  private Map<String, MessageAttributeValue> attributesToSend() {
    Map<String, MessageAttributeValue> attributes = new HashMap<>();
    ((Map<String, Map<String, String>>) plan.get("attributes")).forEach((name, value) -> {
      MessageAttributeValue attribute = new MessageAttributeValue().withDataType(value.get("DataType"));
      if (value.containsKey("BinaryValue")) {
        attribute.setBinaryValue(ByteBuffer.wrap(Base64.getDecoder().decode(value.get("BinaryValue"))));
      } else {
        attribute.setStringValue(value.get("StringValue"));
      }
      attributes.put(name, attribute);
    });
    return attributes;
  }

  private static Map<String, Object> plainAttributes(Map<String, MessageAttributeValue> attributes) {
    Map<String, Object> plain = new LinkedHashMap<>();
    attributes.forEach((name, value) -> {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("DataType", value.getDataType());
      if (value.getStringValue() != null) {
        one.put("StringValue", value.getStringValue());
      }
      if (value.getBinaryValue() != null) {
        ByteBuffer bytes = value.getBinaryValue().duplicate();
        byte[] array = new byte[bytes.remaining()];
        bytes.get(array);
        one.put("BinaryValue", Base64.getEncoder().encodeToString(array));
      }
      plain.put(name, one);
    });
    return plain;
  }

  private Map<String, Object> send() {
    SendMessageResult sent = sqs.sendMessage(new SendMessageRequest(standard, text("body"))
        .withMessageAttributes(attributesToSend()));
    Message message = sqs.receiveMessage(new ReceiveMessageRequest(standard).withMessageAttributeNames("All")
        .withWaitTimeSeconds(2).withMaxNumberOfMessages(1)).getMessages().get(0);
    handles = new ArrayList<>(List.of(message.getReceiptHandle()));
    Map<String, Object> received = new LinkedHashMap<>();
    received.put("message_id", message.getMessageId());
    received.put("body", message.getBody());
    received.put("md5_body", message.getMD5OfBody());
    received.put("md5_attributes", message.getMD5OfMessageAttributes());
    received.put("attributes", plainAttributes(message.getMessageAttributes()));
    Map<String, Object> observed = new LinkedHashMap<>();
    observed.put("message_id", sent.getMessageId());
    observed.put("md5_body", sent.getMD5OfMessageBody());
    observed.put("md5_attributes", sent.getMD5OfMessageAttributes());
    observed.put("received", received);
    return observed;
  }

  private Map<String, Object> delete() {
    sqs.deleteMessage(standard, handles.get(0));
    return Map.of("counts_after", counts(standard));
  }

  private Map<String, Object> sendBatch() {
    List<Map<String, Object>> sent = new ArrayList<>();
    List<Object> failed = new ArrayList<>();
    for (int batch = 0; batch < number("batches"); batch++) {
      Map<String, String> bodies = new LinkedHashMap<>();
      List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
      for (int n = 0; n < 10; n++) {
        bodies.put("e" + n, "m-" + batch + "-" + n);
        entries.add(new SendMessageBatchRequestEntry("e" + n, "m-" + batch + "-" + n));
      }
      SendMessageBatchResult answer = sqs.sendMessageBatch(new SendMessageBatchRequest(standard, entries));
      for (SendMessageBatchResultEntry entry : answer.getSuccessful()) {
        sent.add(Map.of("id", entry.getId(), "body", bodies.get(entry.getId()), "message_id", entry.getMessageId(),
            "md5_body", entry.getMD5OfMessageBody()));
      }
      answer.getFailed().forEach(entry -> failed.add(entry.toString()));
    }
    return Map.of("sent", sent, "failed", failed);
  }

  private Map<String, Object> receiveAll() {
    int expected = 10 * number("batches");
    List<List<String>> received = new ArrayList<>();
    handles = new ArrayList<>();
    int empty = 0;
    while (received.size() < expected && empty < 3) {
      List<Message> messages = sqs.receiveMessage(new ReceiveMessageRequest(standard)
          .withMaxNumberOfMessages(10).withWaitTimeSeconds(1).withVisibilityTimeout(300)).getMessages();
      empty = messages.isEmpty() ? empty + 1 : 0;
      for (Message message : messages) {
        received.add(List.of(message.getMessageId(), message.getBody()));
        handles.add(message.getReceiptHandle());
      }
    }
    return Map.of("received", received);
  }

  private Map<String, Object> deleteBatch() {
    int deleted = 0;
    List<Object> failed = new ArrayList<>();
    for (int start = 0; start < handles.size(); start += 10) {
      List<DeleteMessageBatchRequestEntry> entries = new ArrayList<>();
      List<String> chunk = handles.subList(start, Math.min(start + 10, handles.size()));
      for (int n = 0; n < chunk.size(); n++) {
        entries.add(new DeleteMessageBatchRequestEntry("d" + n, chunk.get(n)));
      }
      DeleteMessageBatchResult answer = sqs.deleteMessageBatch(new DeleteMessageBatchRequest(standard, entries));
      deleted += answer.getSuccessful().size();
      answer.getFailed().forEach(entry -> failed.add(entry.toString()));
    }
    int after = sqs.receiveMessage(new ReceiveMessageRequest(standard).withWaitTimeSeconds(1)).getMessages().size();
    return Map.of("deleted", deleted, "failed", failed, "counts_after", counts(standard), "received_after", after);
  }

  /** Wall clock: a send during a real WaitTimeSeconds, as every SDK's driver does it. */
  private Map<String, Object> longPoll() throws Exception {
    long sendAfter = Math.round(((Number) plan.get("long_poll_send_after")).doubleValue() * 1000);
    long started = System.nanoTime();
    Thread sender = new Thread(() -> {
      try {
        Thread.sleep(sendAfter);
      } catch (InterruptedException error) {
        return;
      }
      sqs.sendMessage(standard, "during the wait");
    });
    sender.start();
    List<Message> messages = sqs.receiveMessage(new ReceiveMessageRequest(standard)
        .withWaitTimeSeconds(number("long_poll_wait"))).getMessages();
    double elapsed = (System.nanoTime() - started) / 1e9;
    sender.join();
    for (Message message : messages) {
      sqs.deleteMessage(standard, message.getReceiptHandle());
    }
    return Map.of("elapsed", elapsed, "bodies", bodies(messages));
  }

  /** Wall clock: the client servers run on real time; 2 s outlast a 1 s visibility. */
  private Map<String, Object> changeVisibility() throws Exception {
    String url = sqs.createQueue(text("visibility_queue")).getQueueUrl();
    sqs.sendMessage(url, "comes back");
    List<Message> first = sqs.receiveMessage(new ReceiveMessageRequest(url).withWaitTimeSeconds(2)
        .withVisibilityTimeout(30)).getMessages();
    sqs.changeMessageVisibility(url, first.get(0).getReceiptHandle(), 0);
    List<Message> again = sqs.receiveMessage(new ReceiveMessageRequest(url).withWaitTimeSeconds(5)
        .withVisibilityTimeout(1)).getMessages();
    sqs.changeMessageVisibility(url, again.get(0).getReceiptHandle(), 30);
    Thread.sleep(2000);
    List<Message> hidden = sqs.receiveMessage(new ReceiveMessageRequest(url).withWaitTimeSeconds(1)).getMessages();
    sqs.deleteQueue(url);
    return Map.of("first", bodies(first), "reappeared", bodies(again), "while_hidden", bodies(hidden));
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> fifoOrder() {
    Map<String, Number> groups = (Map<String, Number>) plan.get("fifo_groups");
    int most = groups.values().stream().mapToInt(Number::intValue).max().orElse(0);
    List<List<String>> sent = new ArrayList<>();
    for (int n = 0; n < most; n++) {
      for (Map.Entry<String, Number> group : groups.entrySet()) {
        if (n < group.getValue().intValue()) {
          String body = group.getKey() + "-" + n;
          SendMessageResult answer = sqs.sendMessage(new SendMessageRequest(fifo, body).withMessageGroupId(group.getKey()));
          sent.add(List.of(group.getKey(), body, answer.getSequenceNumber()));
        }
      }
    }
    List<List<String>> received = new ArrayList<>();
    int empty = 0;
    while (received.size() < sent.size() && empty < 3) {
      List<Message> messages = sqs.receiveMessage(new ReceiveMessageRequest(fifo).withMaxNumberOfMessages(10)
          .withWaitTimeSeconds(1).withAttributeNames("MessageGroupId")).getMessages();
      empty = messages.isEmpty() ? empty + 1 : 0;
      for (Message message : messages) {
        received.add(List.of(message.getAttributes().get("MessageGroupId"), message.getBody()));
        sqs.deleteMessage(fifo, message.getReceiptHandle());
      }
    }
    return Map.of("sent", sent, "received", received);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> attributes() {
    sqs.setQueueAttributes(standard, (Map<String, String>) plan.get("set_attributes"));
    return Map.of("got", sqs.getQueueAttributes(new GetQueueAttributesRequest(standard)
        .withAttributeNames("All")).getAttributes());
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> tags() {
    sqs.tagQueue(standard, (Map<String, String>) plan.get("tags"));
    Map<String, String> afterTag = sqs.listQueueTags(standard).getTags();
    sqs.untagQueue(standard, (List<String>) plan.get("untag"));
    Map<String, String> afterUntag = sqs.listQueueTags(standard).getTags();
    return Map.of("after_tag", afterTag == null ? Map.of() : afterTag,
        "after_untag", afterUntag == null ? Map.of() : afterUntag);
  }

  private Map<String, Object> listPaging() {
    List<String> urls = new ArrayList<>();
    for (int n = 0; n < number("listed_queues"); n++) {
      urls.add(sqs.createQueue(text("listed_prefix") + n).getQueueUrl());
    }
    List<List<String>> pages = new ArrayList<>();
    String token = null;
    while (pages.size() < 50) {
      ListQueuesResult answer = sqs.listQueues(new ListQueuesRequest(text("listed_prefix"))
          .withMaxResults(number("page_size")).withNextToken(token));
      pages.add(answer.getQueueUrls());
      token = answer.getNextToken();
      if (token == null || token.isEmpty()) {
        break;
      }
    }
    urls.forEach(sqs::deleteQueue);
    return Map.of("pages", pages);
  }

  private Map<String, Object> purge() {
    String url = sqs.createQueue(text("purge_queue")).getQueueUrl();
    for (int n = 0; n < number("purged_messages"); n++) {
      sqs.sendMessage(url, "purged-" + n);
    }
    List<Integer> before = counts(url);
    sqs.purgeQueue(new PurgeQueueRequest(url));
    List<Integer> after = counts(url);
    int received = sqs.receiveMessage(new ReceiveMessageRequest(url).withWaitTimeSeconds(1)).getMessages().size();
    sqs.deleteQueue(url);
    return Map.of("counts_before", before, "counts_after", after, "received_after", received);
  }

  private Map<String, Object> deleteQueue() {
    sqs.deleteQueue(standard);
    sqs.deleteQueue(fifo);
    String code = null;
    try {
      sqs.getQueueUrl(text("standard"));
    } catch (AmazonServiceException error) {
      code = error.getErrorCode();
    }
    Map<String, Object> observed = new HashMap<>();
    observed.put("error_code", code);
    observed.put("listed_after", sqs.listQueues(text("prefix")).getQueueUrls());
    return observed;
  }
}
