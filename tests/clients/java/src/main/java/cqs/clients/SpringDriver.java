package cqs.clients;

import io.awspring.cloud.sqs.annotation.SqsListener;
import io.awspring.cloud.sqs.operations.SendResult;
import io.awspring.cloud.sqs.operations.SqsTemplate;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.CreateQueueRequest;
import software.amazon.awssdk.services.sqs.model.DeleteQueueRequest;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest;

/**
 * A Spring Boot application (no web server) with Spring Cloud AWS SQS, configured as an
 * application is, by properties only (`spring.cloud.aws.sqs.endpoint` pointing at cqs): its
 * SqsTemplate sends 200 messages in batches of 10, and one {@code @SqsListener} method receives
 * them, each acknowledged (deleted) by the listener container when the method returns.
 * Reports every message id sent and every delivery; judges nothing.
 */
final class SpringDriver {
  private SpringDriver() {}

  /** The listener the application declares, counting deliveries by SQS message id. */
  public static final class Listener {
    final Map<String, Integer> deliveries = new ConcurrentHashMap<>();
    final CountDownLatch all;

    Listener(int expected) {
      all = new CountDownLatch(expected);
    }

    @SqsListener("${cqs.spring.queue}")
    public void listen(software.amazon.awssdk.services.sqs.model.Message message) {
      if (deliveries.merge(message.messageId(), 1, Integer::sum) == 1) {
        all.countDown();
      }
    }
  }

  /** The application: auto-configuration plus the listener bean. */
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  public static class Application {
    @Bean
    Listener listener(Environment environment) {
      return new Listener(environment.getRequiredProperty("cqs.spring.messages", Integer.class));
    }
  }

  static void run(Map<String, Object> plan, Main.Report report) {
    report.step("spring_listener", () -> listenerReceivesAndAcknowledges(plan));
  }

  /** The version of a jar on the classpath, from the pom.properties Maven put in it. */
  static String mavenVersion(String group, String artifact) throws java.io.IOException {
    String path = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
    try (java.io.InputStream in = SpringDriver.class.getClassLoader().getResourceAsStream(path)) {
      java.util.Properties properties = new java.util.Properties();
      if (in != null) {
        properties.load(in);
      }
      return properties.getProperty("version");
    }
  }

  private static List<Integer> counts(SqsClient sqs, String url) {
    Map<String, String> got = sqs.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(url)
        .attributeNamesWithStrings("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        .build()).attributesAsStrings();
    return List.of(Integer.parseInt(got.get("ApproximateNumberOfMessages")),
        Integer.parseInt(got.get("ApproximateNumberOfMessagesNotVisible")));
  }

  private static Map<String, Object> listenerReceivesAndAcknowledges(Map<String, Object> plan) throws Exception {
    String queue = plan.get("prefix") + "-spring";
    int batches = ((Number) plan.get("batches")).intValue();
    SqsClient sqs = SqsClient.builder()
        .endpointOverride(URI.create((String) plan.get("endpoint")))
        .region(Region.of((String) plan.get("region")))
        .credentialsProvider(V2.credentials())
        .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
        .build();
    String url = sqs.createQueue(CreateQueueRequest.builder().queueName(queue).build()).queueUrl();

    Map<String, Object> properties = new LinkedHashMap<>();
    properties.put("spring.cloud.aws.sqs.endpoint", plan.get("endpoint"));
    properties.put("spring.cloud.aws.region.static", plan.get("region"));
    properties.put("spring.cloud.aws.credentials.access-key", "x");
    properties.put("spring.cloud.aws.credentials.secret-key", "x");
    properties.put("spring.cloud.aws.sqs.queue-not-found-strategy", "fail");
    properties.put("logging.level.root", "WARN");
    properties.put("cqs.spring.queue", queue);
    properties.put("cqs.spring.messages", 10 * batches);
    SpringApplication application = new SpringApplication(Application.class);
    application.setWebApplicationType(WebApplicationType.NONE);
    application.setBannerMode(Banner.Mode.OFF);
    application.setLogStartupInfo(false);
    application.setDefaultProperties(properties);

    try (ConfigurableApplicationContext context = application.run()) {
      SqsTemplate template = context.getBean(SqsTemplate.class);
      Listener listener = context.getBean(Listener.class);
      List<List<String>> sent = new ArrayList<>();
      List<String> failed = new ArrayList<>();
      for (int batch = 0; batch < batches; batch++) {
        List<Message<String>> messages = new ArrayList<>();
        for (int n = 0; n < 10; n++) {
          messages.add(MessageBuilder.withPayload("spring-" + batch + "-" + n).build());
        }
        SendResult.Batch<String> answer = template.sendMany(queue, messages);
        answer.successful().forEach(one -> sent.add(List.of(one.messageId().toString(), one.message().getPayload())));
        answer.failed().forEach(one -> failed.add(one.toString()));
      }
      boolean allHeard = listener.all.await(60, TimeUnit.SECONDS);
      // The container acknowledges in batches after the listener returns: wait for the deletes.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      List<Integer> after = counts(sqs, url);
      while (!after.equals(List.of(0, 0)) && System.nanoTime() < deadline) {
        Thread.sleep(100);
        after = counts(sqs, url);
      }
      Map<String, Object> observed = new LinkedHashMap<>();
      observed.put("spring_cloud_aws", mavenVersion("io.awspring.cloud", "spring-cloud-aws-sqs"));
      observed.put("spring_boot", SpringBootVersion.getVersion());
      observed.put("all_heard", allHeard);
      observed.put("sent", sent);
      observed.put("failed", failed);
      observed.put("deliveries", new LinkedHashMap<>(listener.deliveries));
      observed.put("counts_after", after);
      context.stop();
      sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
      return observed;
    }
  }
}
