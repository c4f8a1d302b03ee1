package cqs.clients;

import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.sqs.model.*;

/**
 * The scenario of tests/clients/scenario.py through the AWS SDK for Java v2 (sync or async, by
 * the {@link V2} given), step for step as tests/clients/python_driver.py runs it; the async run
 * adds one step of its own, several long polls in flight at once. Judges nothing.
 */
final class V2Scenario {
  private final V2 sqs;
  private final Map<String, Object> plan;
  private final Main.Report report;
  private String standard = "";
  private String fifo = "";
  private List<String> handles = new ArrayList<>();

  V2Scenario(V2 sqs, Map<String, Object> plan, Main.Report report) {
    this.sqs = sqs;
    this.plan = plan;
    this.report = report;
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
    if (sqs.asyncClient() != null) {
      report.step("concurrent_long_polls", this::concurrentLongPolls);
    }
    report.step("client", sqs::describe);
  }

  private String text(String key) {
    return (String) plan.get(key);
  }

  private int number(String key) {
    return ((Number) plan.get(key)).intValue();
  }

  private List<Message> receive(String url, ReceiveMessageRequest.Builder options) {
    return sqs.receiveMessage(options.queueUrl(url).build()).messages();
  }

  private List<Integer> counts(String url) {
    Map<String, String> got = sqs.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(url)
        .attributeNamesWithStrings("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        .build()).attributesAsStrings();
    return List.of(Integer.parseInt(got.get("ApproximateNumberOfMessages")),
        Integer.parseInt(got.get("ApproximateNumberOfMessagesNotVisible")));
  }

  private String createQueue(String name, Map<String, String> attributes) {
    return sqs.createQueue(CreateQueueRequest.builder().queueName(name)
        .attributesWithStrings(attributes).build()).queueUrl();
  }

  private static List<String> bodies(List<Message> messages) {
    return messages.stream().map(Message::body).toList();
  }

  private Map<String, Object> create() {
    standard = createQueue(text("standard"), Map.of());
    fifo = createQueue(text("fifo"), Map.of("FifoQueue", "true", "ContentBasedDeduplication", "true"));
    Map<String, String> fifoAttributes = sqs.getQueueAttributes(GetQueueAttributesRequest.builder()
        .queueUrl(fifo).attributeNamesWithStrings("All").build()).attributesAsStrings();
    return Map.of("standard_url", standard, "fifo_url", fifo, "fifo_attributes", fifoAttributes);
  }

  @SuppressWarnings("unchecked")
  private Map<String, MessageAttributeValue> attributesToSend() {
    Map<String, MessageAttributeValue> attributes = new HashMap<>();
    ((Map<String, Map<String, String>>) plan.get("attributes")).forEach((name, value) -> {
      MessageAttributeValue.Builder attribute = MessageAttributeValue.builder().dataType(value.get("DataType"));
      if (value.containsKey("BinaryValue")) {
        attribute.binaryValue(SdkBytes.fromByteArray(Base64.getDecoder().decode(value.get("BinaryValue"))));
      } else {
        attribute.stringValue(value.get("StringValue"));
      }
      attributes.put(name, attribute.build());
    });
    return attributes;
  }

  static Map<String, Object> plainAttributes(Map<String, MessageAttributeValue> attributes) {
    Map<String, Object> plain = new LinkedHashMap<>();
    attributes.forEach((name, value) -> {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("DataType", value.dataType());
      if (value.stringValue() != null) {
        one.put("StringValue", value.stringValue());
      }
      if (value.binaryValue() != null) {
        one.put("BinaryValue", Base64.getEncoder().encodeToString(value.binaryValue().asByteArray()));
      }
      plain.put(name, one);
    });
    return plain;
  }

  private Map<String, Object> send() {
    SendMessageResponse sent = sqs.sendMessage(SendMessageRequest.builder().queueUrl(standard)
        .messageBody(text("body")).messageAttributes(attributesToSend()).build());
    List<Message> messages = receive(standard, ReceiveMessageRequest.builder()
        .messageAttributeNames("All").waitTimeSeconds(2).maxNumberOfMessages(1));
    Message message = messages.get(0);
    handles = new ArrayList<>(List.of(message.receiptHandle()));
    Map<String, Object> received = new LinkedHashMap<>();
    received.put("message_id", message.messageId());
    received.put("body", message.body());
    received.put("md5_body", message.md5OfBody());
    received.put("md5_attributes", message.md5OfMessageAttributes());
    received.put("attributes", plainAttributes(message.messageAttributes()));
    Map<String, Object> observed = new LinkedHashMap<>();
    observed.put("message_id", sent.messageId());
    observed.put("md5_body", sent.md5OfMessageBody());
    observed.put("md5_attributes", sent.md5OfMessageAttributes());
    observed.put("received", received);
    return observed;
  }

  private Map<String, Object> delete() {
    sqs.deleteMessage(DeleteMessageRequest.builder().queueUrl(standard).receiptHandle(handles.get(0)).build());
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
        entries.add(SendMessageBatchRequestEntry.builder().id("e" + n).messageBody("m-" + batch + "-" + n).build());
      }
      SendMessageBatchResponse answer = sqs.sendMessageBatch(SendMessageBatchRequest.builder()
          .queueUrl(standard).entries(entries).build());
      for (SendMessageBatchResultEntry entry : answer.successful()) {
        sent.add(Map.of("id", entry.id(), "body", bodies.get(entry.id()), "message_id", entry.messageId(),
            "md5_body", entry.md5OfMessageBody()));
      }
      answer.failed().forEach(entry -> failed.add(entry.toString()));
    }
    return Map.of("sent", sent, "failed", failed);
  }

  private Map<String, Object> receiveAll() {
    int expected = 10 * number("batches");
    List<List<String>> received = new ArrayList<>();
    handles = new ArrayList<>();
    int empty = 0;
    while (received.size() < expected && empty < 3) {
      List<Message> messages = receive(standard, ReceiveMessageRequest.builder()
          .maxNumberOfMessages(10).waitTimeSeconds(1).visibilityTimeout(300));
      empty = messages.isEmpty() ? empty + 1 : 0;
      for (Message message : messages) {
        received.add(List.of(message.messageId(), message.body()));
        handles.add(message.receiptHandle());
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
        entries.add(DeleteMessageBatchRequestEntry.builder().id("d" + n).receiptHandle(chunk.get(n)).build());
      }
      DeleteMessageBatchResponse answer = sqs.deleteMessageBatch(DeleteMessageBatchRequest.builder()
          .queueUrl(standard).entries(entries).build());
      deleted += answer.successful().size();
      answer.failed().forEach(entry -> failed.add(entry.toString()));
    }
    List<Message> after = receive(standard, ReceiveMessageRequest.builder().waitTimeSeconds(1));
    return Map.of("deleted", deleted, "failed", failed, "counts_after", counts(standard),
        "received_after", after.size());
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
      sqs.sendMessage(SendMessageRequest.builder().queueUrl(standard).messageBody("during the wait").build());
    });
    sender.start();
    List<Message> messages = receive(standard, ReceiveMessageRequest.builder()
        .waitTimeSeconds(number("long_poll_wait")));
    double elapsed = (System.nanoTime() - started) / 1e9;
    sender.join();
    for (Message message : messages) {
      sqs.deleteMessage(DeleteMessageRequest.builder().queueUrl(standard).receiptHandle(message.receiptHandle()).build());
    }
    return Map.of("elapsed", elapsed, "bodies", bodies(messages));
  }

  /** Wall clock: the client servers run on real time; 2 s outlast a 1 s visibility. */
  private Map<String, Object> changeVisibility() throws Exception {
    String url = createQueue(text("visibility_queue"), Map.of());
    sqs.sendMessage(SendMessageRequest.builder().queueUrl(url).messageBody("comes back").build());
    List<Message> first = receive(url, ReceiveMessageRequest.builder().waitTimeSeconds(2).visibilityTimeout(30));
    sqs.changeMessageVisibility(ChangeMessageVisibilityRequest.builder().queueUrl(url)
        .receiptHandle(first.get(0).receiptHandle()).visibilityTimeout(0).build());
    List<Message> again = receive(url, ReceiveMessageRequest.builder().waitTimeSeconds(5).visibilityTimeout(1));
    sqs.changeMessageVisibility(ChangeMessageVisibilityRequest.builder().queueUrl(url)
        .receiptHandle(again.get(0).receiptHandle()).visibilityTimeout(30).build());
    Thread.sleep(2000);
    List<Message> hidden = receive(url, ReceiveMessageRequest.builder().waitTimeSeconds(1));
    sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
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
          SendMessageResponse answer = sqs.sendMessage(SendMessageRequest.builder().queueUrl(fifo)
              .messageBody(body).messageGroupId(group.getKey()).build());
          sent.add(List.of(group.getKey(), body, answer.sequenceNumber()));
        }
      }
    }
    List<List<String>> received = new ArrayList<>();
    int empty = 0;
    while (received.size() < sent.size() && empty < 3) {
      List<Message> messages = receive(fifo, ReceiveMessageRequest.builder().maxNumberOfMessages(10)
          .waitTimeSeconds(1).messageSystemAttributeNamesWithStrings("MessageGroupId"));
      empty = messages.isEmpty() ? empty + 1 : 0;
      for (Message message : messages) {
        received.add(List.of(message.attributesAsStrings().get("MessageGroupId"), message.body()));
        sqs.deleteMessage(DeleteMessageRequest.builder().queueUrl(fifo).receiptHandle(message.receiptHandle()).build());
      }
    }
    return Map.of("sent", sent, "received", received);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> attributes() {
    sqs.setQueueAttributes(SetQueueAttributesRequest.builder().queueUrl(standard)
        .attributesWithStrings((Map<String, String>) plan.get("set_attributes")).build());
    Map<String, String> got = sqs.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(standard)
        .attributeNamesWithStrings("All").build()).attributesAsStrings();
    return Map.of("got", got);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> tags() {
    sqs.tagQueue(TagQueueRequest.builder().queueUrl(standard).tags((Map<String, String>) plan.get("tags")).build());
    Map<String, String> afterTag = sqs.listQueueTags(ListQueueTagsRequest.builder().queueUrl(standard).build()).tags();
    sqs.untagQueue(UntagQueueRequest.builder().queueUrl(standard).tagKeys((List<String>) plan.get("untag")).build());
    Map<String, String> afterUntag = sqs.listQueueTags(ListQueueTagsRequest.builder().queueUrl(standard).build()).tags();
    return Map.of("after_tag", afterTag, "after_untag", afterUntag);
  }

  private Map<String, Object> listPaging() {
    List<String> urls = new ArrayList<>();
    for (int n = 0; n < number("listed_queues"); n++) {
      urls.add(createQueue(text("listed_prefix") + n, Map.of()));
    }
    List<List<String>> pages = new ArrayList<>();
    String token = null;
    while (pages.size() < 50) {
      ListQueuesResponse answer = sqs.listQueues(ListQueuesRequest.builder().queueNamePrefix(text("listed_prefix"))
          .maxResults(number("page_size")).nextToken(token).build());
      pages.add(answer.queueUrls());
      token = answer.nextToken();
      if (token == null || token.isEmpty()) {
        break;
      }
    }
    for (String url : urls) {
      sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
    }
    return Map.of("pages", pages);
  }

  private Map<String, Object> purge() {
    String url = createQueue(text("purge_queue"), Map.of());
    for (int n = 0; n < number("purged_messages"); n++) {
      sqs.sendMessage(SendMessageRequest.builder().queueUrl(url).messageBody("purged-" + n).build());
    }
    List<Integer> before = counts(url);
    sqs.purgeQueue(PurgeQueueRequest.builder().queueUrl(url).build());
    List<Integer> after = counts(url);
    List<Message> received = receive(url, ReceiveMessageRequest.builder().waitTimeSeconds(1));
    sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
    return Map.of("counts_before", before, "counts_after", after, "received_after", received.size());
  }

  private Map<String, Object> deleteQueue() {
    sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(standard).build());
    sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(fifo).build());
    String code = null;
    try {
      sqs.getQueueUrl(GetQueueUrlRequest.builder().queueName(text("standard")).build());
    } catch (AwsServiceException error) {
      code = error.awsErrorDetails().errorCode();
    }
    List<String> listed = sqs.listQueues(ListQueuesRequest.builder().queueNamePrefix(text("prefix")).build()).queueUrls();
    Map<String, Object> observed = new HashMap<>();
    observed.put("error_code", code);
    observed.put("listed_after", listed);
    return observed;
  }

  /**
   * Several ReceiveMessage long polls in flight at once on the async client, answered by
   * messages sent while they wait: what each poll got, and how long it waited.
   * Wall clock: the sends come a real second into the polls' WaitTimeSeconds.
   */
  private Map<String, Object> concurrentLongPolls() throws Exception {
    int polls = number("concurrent_polls");
    int wait = number("concurrent_poll_wait");
    String url = createQueue(text("prefix") + "-polls", Map.of());
    long started = System.nanoTime();
    List<CompletableFuture<Map<String, Object>>> inFlight = new ArrayList<>();
    for (int n = 0; n < polls; n++) {
      inFlight.add(sqs.asyncClient().receiveMessage(ReceiveMessageRequest.builder().queueUrl(url)
              .maxNumberOfMessages(1).waitTimeSeconds(wait).build())
          .thenApply(answer -> Map.of(
              "message_ids", answer.messages().stream().map(Message::messageId).toList(),
              "elapsed", (System.nanoTime() - started) / 1e9)));
    }
    Thread.sleep(1000);
    List<String> sent = new ArrayList<>();
    for (int start = 0; start < polls; start += 10) {
      List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
      for (int n = start; n < Math.min(start + 10, polls); n++) {
        entries.add(SendMessageBatchRequestEntry.builder().id("p" + n).messageBody("poll-" + n).build());
      }
      sqs.sendMessageBatch(SendMessageBatchRequest.builder().queueUrl(url).entries(entries).build())
          .successful().forEach(entry -> sent.add(entry.messageId()));
    }
    double sentAt = (System.nanoTime() - started) / 1e9;
    List<Map<String, Object>> answered = new ArrayList<>();
    for (CompletableFuture<Map<String, Object>> poll : inFlight) {
      answered.add(poll.join());
    }
    sqs.deleteQueue(DeleteQueueRequest.builder().queueUrl(url).build());
    return Map.of("sent", sent, "sent_at", sentAt, "polls", answered, "wait", wait);
  }
}
