package cqs.clients;

import com.amazon.sqs.javamessaging.AmazonSQSMessagingClientWrapper;
import com.amazon.sqs.javamessaging.ProviderConfiguration;
import com.amazon.sqs.javamessaging.SQSConnection;
import com.amazon.sqs.javamessaging.SQSConnectionFactory;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.CreateQueueRequest;
import software.amazon.awssdk.services.sqs.model.DeleteQueueRequest;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest;

/**
 * The Amazon SQS Java Messaging Library (JMS 3.1, over the SDK v2) against cqs: a producer
 * and a consumer with AUTO_ACKNOWLEDGE, a MessageListener with CLIENT_ACKNOWLEDGE that lets
 * one delivery go unacknowledged and sees it redelivered, and a FIFO queue with message groups.
 * Every step reports the JMS message ids sent and received; judges nothing.
 */
final class JmsDriver {
  private final Map<String, Object> plan;
  private final Main.Report report;
  private final SqsClient sqs;
  private final SQSConnectionFactory factory;

  JmsDriver(Map<String, Object> plan, Main.Report report) {
    this.plan = plan;
    this.report = report;
    this.sqs = SqsClient.builder()
        .endpointOverride(URI.create((String) plan.get("endpoint")))
        .region(Region.of((String) plan.get("region")))
        .credentialsProvider(V2.credentials())
        .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
        .build();
    this.factory = new SQSConnectionFactory(new ProviderConfiguration(), sqs);
  }

  void run() {
    report.step("jms_send_receive", this::sendReceive);
    report.step("jms_listener_client_acknowledge", this::listenerClientAcknowledge);
    report.step("jms_fifo", this::fifo);
  }

  private String name(String suffix) {
    return plan.get("prefix") + "-" + suffix;
  }

  private int number(String key) {
    return ((Number) plan.get(key)).intValue();
  }

  private List<Integer> counts(String url) {
    Map<String, String> got = sqs.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(url)
        .attributeNamesWithStrings("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        .build()).attributesAsStrings();
    return List.of(Integer.parseInt(got.get("ApproximateNumberOfMessages")),
        Integer.parseInt(got.get("ApproximateNumberOfMessagesNotVisible")));
  }

  /** Counts once the acknowledgements have landed (they may trail the last delivery). */
  private List<Integer> settledCounts(String url) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    List<Integer> counts = counts(url);
    while (!counts.equals(List.of(0, 0)) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      counts = counts(url);
    }
    return counts;
  }

  private String createQueue(SQSConnection connection, String name, Map<String, String> attributes)
      throws Exception {
    AmazonSQSMessagingClientWrapper client = connection.getWrappedAmazonSQSClient();
    return client.createQueue(CreateQueueRequest.builder().queueName(name).attributesWithStrings(attributes)
        .build()).queueUrl();
  }

  private static Map<String, Object> delivery(Message message) throws Exception {
    Map<String, Object> one = new LinkedHashMap<>();
    one.put("id", message.getJMSMessageID());
    one.put("body", ((TextMessage) message).getText());
    one.put("redelivered", message.getJMSRedelivered());
    one.put("delivery_count", message.getIntProperty("JMSXDeliveryCount"));
    return one;
  }

  /** A producer sends, a consumer (AUTO_ACKNOWLEDGE) receives; properties travel as attributes. */
  private Map<String, Object> sendReceive() throws Exception {
    int count = number("jms_messages");
    try (SQSConnection connection = factory.createConnection()) {
      String url = createQueue(connection, name("jms"), Map.of());
      Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
      Queue queue = session.createQueue(name("jms"));
      MessageProducer producer = session.createProducer(queue);
      List<List<String>> sent = new ArrayList<>();
      for (int n = 0; n < count; n++) {
        TextMessage message = session.createTextMessage("jms-" + n);
        message.setStringProperty("kind", "greeting");
        message.setIntProperty("number", n);
        message.setBooleanProperty("even", n % 2 == 0);
        producer.send(message);
        sent.add(List.of(message.getJMSMessageID(), message.getText()));
      }
      connection.start();
      MessageConsumer consumer = session.createConsumer(queue);
      List<Map<String, Object>> received = new ArrayList<>();
      while (received.size() < count) {
        Message message = consumer.receive(5000);
        if (message == null) {
          break;
        }
        Map<String, Object> one = delivery(message);
        one.put("kind", message.getStringProperty("kind"));
        one.put("number", message.getIntProperty("number"));
        one.put("even", message.getBooleanProperty("even"));
        received.add(one);
      }
      List<Integer> after = settledCounts(url);
      sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
      return Map.of("sent", sent, "received", received, "counts_after", after);
    }
  }

  /**
   * A MessageListener with CLIENT_ACKNOWLEDGE: the first delivery of the first message is left
   * unacknowledged and comes back once the queue's 2 s visibility timeout ends; every delivery
   * after that is acknowledged. Wall clock: the redelivery waits on the server's real
   * visibility timeout.
   */
  private Map<String, Object> listenerClientAcknowledge() throws Exception {
    int count = number("jms_messages");
    try (SQSConnection connection = factory.createConnection()) {
      String url = createQueue(connection, name("jms-listener"), Map.of("VisibilityTimeout", "2"));
      Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
      Queue queue = session.createQueue(name("jms-listener"));
      List<Map<String, Object>> deliveries = java.util.Collections.synchronizedList(new ArrayList<>());
      List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
      CountDownLatch redelivered = new CountDownLatch(2);
      CountDownLatch all = new CountDownLatch(count);
      MessageConsumer consumer = session.createConsumer(queue);
      consumer.setMessageListener(message -> {
        try {
          Map<String, Object> one = delivery(message);
          deliveries.add(one);
          if ("left-unacknowledged".equals(one.get("body"))) {
            if (redelivered.getCount() == 1) {
              message.acknowledge();
            }
            redelivered.countDown();
          } else {
            message.acknowledge();
            all.countDown();
          }
        } catch (Exception error) {
          errors.add(error.toString());
        }
      });
      connection.start();
      MessageProducer producer = session.createProducer(queue);
      producer.send(session.createTextMessage("left-unacknowledged"));
      boolean cameBack = redelivered.await(20, TimeUnit.SECONDS);
      List<List<String>> sent = new ArrayList<>();
      for (int n = 0; n < count; n++) {
        TextMessage message = session.createTextMessage("listened-" + n);
        producer.send(message);
        sent.add(List.of(message.getJMSMessageID(), message.getText()));
      }
      boolean allHeard = all.await(30, TimeUnit.SECONDS);
      List<Integer> after = settledCounts(url);
      connection.stop();
      sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
      Map<String, Object> observed = new LinkedHashMap<>();
      observed.put("came_back", cameBack);
      observed.put("all_heard", allHeard);
      observed.put("sent", sent);
      observed.put("deliveries", new ArrayList<>(deliveries));
      observed.put("listener_errors", new ArrayList<>(errors));
      observed.put("counts_after", after);
      return observed;
    }
  }

  /** A FIFO queue through JMS: JMSXGroupID is the message group; order kept within each. */
  @SuppressWarnings("unchecked")
  private Map<String, Object> fifo() throws Exception {
    Map<String, Number> groups = (Map<String, Number>) plan.get("fifo_groups");
    int most = groups.values().stream().mapToInt(Number::intValue).max().orElse(0);
    try (SQSConnection connection = factory.createConnection()) {
      String url = createQueue(connection, name("jms.fifo"),
          Map.of("FifoQueue", "true", "ContentBasedDeduplication", "true"));
      Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
      Queue queue = session.createQueue(name("jms.fifo"));
      MessageProducer producer = session.createProducer(queue);
      List<List<String>> sent = new ArrayList<>();
      for (int n = 0; n < most; n++) {
        for (Map.Entry<String, Number> group : groups.entrySet()) {
          if (n < group.getValue().intValue()) {
            TextMessage message = session.createTextMessage(group.getKey() + "-" + n);
            message.setStringProperty("JMSXGroupID", group.getKey());
            producer.send(message);
            sent.add(java.util.Arrays.asList(group.getKey(), message.getText(), message.getJMSMessageID(),
                message.getStringProperty("JMS_SQS_SequenceNumber")));
          }
        }
      }
      connection.start();
      MessageConsumer consumer = session.createConsumer(queue);
      List<List<String>> received = new ArrayList<>();
      while (received.size() < sent.size()) {
        Message message = consumer.receive(5000);
        if (message == null) {
          break;
        }
        received.add(List.of(message.getStringProperty("JMSXGroupID"), ((TextMessage) message).getText(),
            message.getJMSMessageID()));
        message.acknowledge();
      }
      List<Integer> after = settledCounts(url);
      sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
      return Map.of("sent", sent, "received", received, "counts_after", after);
    }
  }
}
