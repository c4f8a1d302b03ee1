//! The scenario of tests/clients/scenario.py through the AWS SDK for Rust (`aws-sdk-sqs`, AWS
//! JSON 1.0), unmodified: `sqs-scenario '<plan json>'`. Prints one JSON line per step with what
//! it observed (binary values base64-encoded), or {"step", "error"}; it judges nothing (the
//! pytest side does, in tests/clients/test_rust_sdk.py). The steps mirror python_driver.py.
//!
//! The client is built without aws-config (no credential chain, no TLS): a static key, the
//! plan's endpoint, plain HTTP over hyper, one attempt per call so that a server error is seen
//! rather than retried away. An interceptor records the Content-Type the SDK sends, so the
//! test sees the protocol on the wire rather than taking it on trust.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_sqs::config::{
    BehaviorVersion, ConfigBag, Credentials, Intercept, Region, RuntimeComponents,
};
use aws_sdk_sqs::error::{BoxError, DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, Message, MessageAttributeValue, MessageSystemAttributeName,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;
use aws_smithy_types::base64;
use serde_json::{json, Map, Value};

/// A step's failure, as text: any SDK error converts, shown with its whole chain of causes.
struct Failure(String);

impl<E: std::error::Error> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(DisplayErrorContext(error).to_string())
    }
}

fn fail(message: &str) -> Failure {
    Failure(message.to_string())
}

type Step = Result<Value, Failure>;

/// Records the Content-Type of each request the SDK sends.
#[derive(Debug, Default)]
struct ContentTypes(Arc<Mutex<Vec<String>>>);

impl Intercept for ContentTypes {
    fn name(&self) -> &'static str {
        "ContentTypes"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let content_type = context.request().headers().get("content-type").unwrap_or("");
        self.0.lock().unwrap().push(content_type.to_string());
        Ok(())
    }
}

struct Run {
    plan: Value,
    client: Client,
    standard: String,
    fifo: String,
    handles: Vec<String>,
}

fn text(plan: &Value, key: &str) -> String {
    plan[key].as_str().unwrap_or_default().to_string()
}

fn number(plan: &Value, key: &str) -> i64 {
    plan[key].as_i64().unwrap_or_default()
}

fn bodies(messages: &[Message]) -> Value {
    json!(messages.iter().map(|m| m.body().unwrap_or_default()).collect::<Vec<_>>())
}

fn attributes_out(attributes: Option<&HashMap<String, MessageAttributeValue>>) -> Value {
    let mut out = Map::new();
    for (name, value) in attributes.into_iter().flatten() {
        let mut entry = Map::new();
        entry.insert("DataType".into(), json!(value.data_type()));
        if let Some(string) = value.string_value() {
            entry.insert("StringValue".into(), json!(string));
        }
        if let Some(blob) = value.binary_value() {
            entry.insert("BinaryValue".into(), json!(base64::encode(blob.as_ref())));
        }
        out.insert(name.clone(), Value::Object(entry));
    }
    Value::Object(out)
}

fn string_map<K: AsRef<str>>(map: Option<&HashMap<K, String>>) -> Value {
    let sorted: BTreeMap<&str, &str> =
        map.into_iter().flatten().map(|(k, v)| (k.as_ref(), v.as_str())).collect();
    json!(sorted)
}

impl Run {
    async fn receive(
        &self,
        url: &str,
        wait: i32,
        most: i32,
        visibility: Option<i32>,
    ) -> Result<Vec<Message>, Failure> {
        let out = self
            .client
            .receive_message()
            .queue_url(url)
            .wait_time_seconds(wait)
            .max_number_of_messages(most)
            .set_visibility_timeout(visibility)
            .send()
            .await?;
        Ok(out.messages.unwrap_or_default())
    }

    async fn counts(&self, url: &str) -> Result<Value, Failure> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await?;
        let got = out.attributes().ok_or_else(|| fail("no attributes"))?;
        let count = |name: QueueAttributeName| -> i64 {
            got.get(&name).and_then(|v| v.parse().ok()).unwrap_or(-1)
        };
        Ok(json!([
            count(QueueAttributeName::ApproximateNumberOfMessages),
            count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        ]))
    }

    async fn create_queue(&self, name: &str) -> Result<String, Failure> {
        let out = self.client.create_queue().queue_name(name).send().await?;
        Ok(out.queue_url.unwrap_or_default())
    }

    async fn send_body(&self, url: &str, body: &str) -> Result<(), Failure> {
        self.client.send_message().queue_url(url).message_body(body).send().await?;
        Ok(())
    }

    async fn remove(&self, url: &str, handle: &str) -> Result<(), Failure> {
        self.client.delete_message().queue_url(url).receipt_handle(handle).send().await?;
        Ok(())
    }

    async fn create(&mut self) -> Step {
        self.standard = self.create_queue(&text(&self.plan, "standard")).await?;
        let fifo = self
            .client
            .create_queue()
            .queue_name(text(&self.plan, "fifo"))
            .attributes(QueueAttributeName::FifoQueue, "true")
            .attributes(QueueAttributeName::ContentBasedDeduplication, "true")
            .send()
            .await?;
        self.fifo = fifo.queue_url.unwrap_or_default();
        let got = self
            .client
            .get_queue_attributes()
            .queue_url(&self.fifo)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await?;
        Ok(json!({"standard_url": self.standard, "fifo_url": self.fifo,
                  "fifo_attributes": string_map(got.attributes())}))
    }

    async fn send(&mut self) -> Step {
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.standard)
            .message_body(text(&self.plan, "body"));
        for (name, value) in self.plan["attributes"].as_object().into_iter().flatten() {
            let mut attribute = MessageAttributeValue::builder().data_type(text(value, "DataType"));
            if let Some(string) = value["StringValue"].as_str() {
                attribute = attribute.string_value(string);
            }
            if let Some(encoded) = value["BinaryValue"].as_str() {
                attribute = attribute.binary_value(Blob::new(base64::decode(encoded)?));
            }
            request = request.message_attributes(name, attribute.build()?);
        }
        let sent = request.send().await?;
        let out = self
            .client
            .receive_message()
            .queue_url(&self.standard)
            .message_attribute_names("All")
            .wait_time_seconds(2)
            .max_number_of_messages(1)
            .send()
            .await?;
        let message = out.messages().first().ok_or_else(|| fail("nothing received"))?;
        self.handles = vec![message.receipt_handle().unwrap_or_default().to_string()];
        Ok(json!({
            "message_id": sent.message_id(), "md5_body": sent.md5_of_message_body(),
            "md5_attributes": sent.md5_of_message_attributes(),
            "received": {
                "message_id": message.message_id(), "body": message.body(),
                "md5_body": message.md5_of_body(),
                "md5_attributes": message.md5_of_message_attributes(),
                "attributes": attributes_out(message.message_attributes()),
            }
        }))
    }

    async fn delete(&mut self) -> Step {
        self.remove(&self.standard, &self.handles[0]).await?;
        Ok(json!({"counts_after": self.counts(&self.standard).await?}))
    }

    async fn send_batch(&mut self) -> Step {
        let (mut sent, mut failed) = (vec![], vec![]);
        for batch in 0..number(&self.plan, "batches") {
            let mut body_of = HashMap::new();
            let mut request = self.client.send_message_batch().queue_url(&self.standard);
            for n in 0..10 {
                let (id, body) = (format!("e{n}"), format!("m-{batch}-{n}"));
                request = request.entries(
                    SendMessageBatchRequestEntry::builder().id(&id).message_body(&body).build()?,
                );
                body_of.insert(id, body);
            }
            let out = request.send().await?;
            for entry in out.successful() {
                sent.push(json!({"id": entry.id(), "body": body_of[entry.id()],
                                 "message_id": entry.message_id(),
                                 "md5_body": entry.md5_of_message_body()}));
            }
            for entry in out.failed() {
                failed.push(json!({"id": entry.id(), "code": entry.code()}));
            }
        }
        Ok(json!({"sent": sent, "failed": failed}))
    }

    async fn receive_all(&mut self) -> Step {
        let expected = 10 * number(&self.plan, "batches") as usize;
        let (mut received, mut empty) = (vec![], 0);
        self.handles.clear();
        while received.len() < expected && empty < 3 {
            let messages = self.receive(&self.standard, 1, 10, Some(300)).await?;
            empty = if messages.is_empty() { empty + 1 } else { 0 };
            for m in &messages {
                received.push(json!([m.message_id(), m.body()]));
                self.handles.push(m.receipt_handle().unwrap_or_default().to_string());
            }
        }
        Ok(json!({"received": received}))
    }

    async fn delete_batch(&mut self) -> Step {
        let (mut deleted, mut failed) = (0, vec![]);
        for chunk in self.handles.chunks(10) {
            let mut request = self.client.delete_message_batch().queue_url(&self.standard);
            for (n, handle) in chunk.iter().enumerate() {
                request = request.entries(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(format!("d{n}"))
                        .receipt_handle(handle)
                        .build()?,
                );
            }
            let out = request.send().await?;
            deleted += out.successful().len();
            for entry in out.failed() {
                failed.push(json!({"id": entry.id(), "code": entry.code()}));
            }
        }
        let after = self.receive(&self.standard, 1, 1, None).await?;
        Ok(json!({"deleted": deleted, "failed": failed,
                  "counts_after": self.counts(&self.standard).await?,
                  "received_after": after.len()}))
    }

    async fn long_poll(&mut self) -> Step {
        let started = Instant::now();
        let send_after = Duration::from_secs_f64(self.plan["long_poll_send_after"].as_f64().unwrap_or(1.5));
        let (client, url) = (self.client.clone(), self.standard.clone());
        let sender = tokio::spawn(async move {
            tokio::time::sleep(send_after).await;
            client.send_message().queue_url(url).message_body("during the wait").send().await
        });
        let wait = number(&self.plan, "long_poll_wait") as i32;
        let messages = self.receive(&self.standard, wait, 1, None).await?;
        let elapsed = started.elapsed().as_secs_f64();
        sender.await.map_err(|e| Failure(e.to_string()))??;
        for m in &messages {
            self.remove(&self.standard, m.receipt_handle().unwrap_or_default()).await?;
        }
        Ok(json!({"elapsed": elapsed, "bodies": bodies(&messages)}))
    }

    async fn change_visibility(&mut self) -> Step {
        // A queue of its own, so what earlier steps left behind cannot be received here.
        let url = self.create_queue(&text(&self.plan, "visibility_queue")).await?;
        self.send_body(&url, "comes back").await?;
        let first = self.receive(&url, 2, 1, Some(30)).await?;
        let handle = first.first().and_then(|m| m.receipt_handle()).ok_or_else(|| fail("none"))?;
        self.client
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await?;
        let again = self.receive(&url, 5, 1, Some(1)).await?;
        let handle = again.first().and_then(|m| m.receipt_handle()).ok_or_else(|| fail("none"))?;
        // May arrive after that 1 s on a slow machine: as in SQS it still applies.
        self.client
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(30)
            .send()
            .await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let hidden = self.receive(&url, 1, 1, None).await?;
        self.client.delete_queue().queue_url(&url).send().await?;
        Ok(json!({"first": bodies(&first), "reappeared": bodies(&again),
                  "while_hidden": bodies(&hidden)}))
    }

    async fn fifo_order(&mut self) -> Step {
        let groups: BTreeMap<String, i64> = self.plan["fifo_groups"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(group, count)| (group.clone(), count.as_i64().unwrap_or_default()))
            .collect();
        let most = groups.values().copied().max().unwrap_or_default();
        let mut sent = vec![];
        for n in 0..most {
            for (group, count) in &groups {
                if n < *count {
                    let body = format!("{group}-{n}");
                    let out = self
                        .client
                        .send_message()
                        .queue_url(&self.fifo)
                        .message_body(&body)
                        .message_group_id(group)
                        .send()
                        .await?;
                    sent.push(json!([group, body, out.sequence_number()]));
                }
            }
        }
        let (mut received, mut empty) = (vec![], 0);
        while received.len() < sent.len() && empty < 3 {
            let out = self
                .client
                .receive_message()
                .queue_url(&self.fifo)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
                .send()
                .await?;
            let messages = out.messages();
            empty = if messages.is_empty() { empty + 1 } else { 0 };
            for m in messages {
                let group = m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                    .cloned()
                    .unwrap_or_default();
                received.push(json!([group, m.body()]));
                self.remove(&self.fifo, m.receipt_handle().unwrap_or_default()).await?;
            }
        }
        Ok(json!({"sent": sent, "received": received}))
    }

    async fn attributes(&mut self) -> Step {
        let mut request = self.client.set_queue_attributes().queue_url(&self.standard);
        for (name, value) in self.plan["set_attributes"].as_object().into_iter().flatten() {
            request = request.attributes(QueueAttributeName::from(name.as_str()),
                                         value.as_str().unwrap_or_default());
        }
        request.send().await?;
        let got = self
            .client
            .get_queue_attributes()
            .queue_url(&self.standard)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await?;
        Ok(json!({"got": string_map(got.attributes())}))
    }

    async fn tags(&mut self) -> Step {
        let mut tag = self.client.tag_queue().queue_url(&self.standard);
        for (key, value) in self.plan["tags"].as_object().into_iter().flatten() {
            tag = tag.tags(key, value.as_str().unwrap_or_default());
        }
        tag.send().await?;
        let after_tag = self.client.list_queue_tags().queue_url(&self.standard).send().await?;
        let mut untag = self.client.untag_queue().queue_url(&self.standard);
        for key in self.plan["untag"].as_array().into_iter().flatten() {
            untag = untag.tag_keys(key.as_str().unwrap_or_default());
        }
        untag.send().await?;
        let after_untag = self.client.list_queue_tags().queue_url(&self.standard).send().await?;
        Ok(json!({"after_tag": string_map(after_tag.tags()),
                  "after_untag": string_map(after_untag.tags())}))
    }

    async fn list_paging(&mut self) -> Step {
        let prefix = text(&self.plan, "listed_prefix");
        let mut urls = vec![];
        for n in 0..number(&self.plan, "listed_queues") {
            urls.push(self.create_queue(&format!("{prefix}{n}")).await?);
        }
        let (mut pages, mut token): (Vec<Value>, Option<String>) = (vec![], None);
        while pages.len() < 50 {
            let out = self
                .client
                .list_queues()
                .queue_name_prefix(&prefix)
                .max_results(number(&self.plan, "page_size") as i32)
                .set_next_token(token)
                .send()
                .await?;
            pages.push(json!(out.queue_urls()));
            token = out.next_token().filter(|t| !t.is_empty()).map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        for url in &urls {
            self.client.delete_queue().queue_url(url).send().await?;
        }
        Ok(json!({"pages": pages}))
    }

    async fn purge(&mut self) -> Step {
        let url = self.create_queue(&text(&self.plan, "purge_queue")).await?;
        for n in 0..number(&self.plan, "purged_messages") {
            self.send_body(&url, &format!("purged-{n}")).await?;
        }
        let before = self.counts(&url).await?;
        self.client.purge_queue().queue_url(&url).send().await?;
        let after = self.counts(&url).await?;
        let received = self.receive(&url, 1, 1, None).await?;
        self.client.delete_queue().queue_url(&url).send().await?;
        Ok(json!({"counts_before": before, "counts_after": after,
                  "received_after": received.len()}))
    }

    async fn delete_queue(&mut self) -> Step {
        for url in [&self.standard, &self.fifo] {
            self.client.delete_queue().queue_url(url).send().await?;
        }
        let code = match self.client.get_queue_url().queue_name(text(&self.plan, "standard")).send().await {
            Ok(_) => None,
            Err(error) => error.into_service_error().code().map(str::to_string),
        };
        let listed = self
            .client
            .list_queues()
            .queue_name_prefix(text(&self.plan, "prefix"))
            .send()
            .await?;
        Ok(json!({"error_code": code, "listed_after": listed.queue_urls()}))
    }

    async fn step(&mut self, name: &str) -> Step {
        match name {
            "create" => self.create().await,
            "send" => self.send().await,
            "delete" => self.delete().await,
            "send_batch" => self.send_batch().await,
            "receive_all" => self.receive_all().await,
            "delete_batch" => self.delete_batch().await,
            "long_poll" => self.long_poll().await,
            "change_visibility" => self.change_visibility().await,
            "fifo" => self.fifo_order().await,
            "attributes" => self.attributes().await,
            "tags" => self.tags().await,
            "list_paging" => self.list_paging().await,
            "purge" => self.purge().await,
            "delete_queue" => self.delete_queue().await,
            _ => Err(fail("no such step")),
        }
    }
}

const STEPS: [&str; 14] = [
    "create", "send", "delete", "send_batch", "receive_all", "delete_batch", "long_poll",
    "change_visibility", "fifo", "attributes", "tags", "list_paging", "purge", "delete_queue",
];

async fn scenario(plan: Value) {
    let content_types = Arc::new(Mutex::new(vec![]));
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(text(&plan, "region")))
        .endpoint_url(text(&plan, "endpoint"))
        .credentials_provider(Credentials::new("x", "x", None, None, "static"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::standard().with_max_attempts(1))
        .interceptor(ContentTypes(content_types.clone()))
        .build();
    let mut run = Run {
        plan,
        client: Client::from_conf(config),
        standard: String::new(),
        fifo: String::new(),
        handles: vec![],
    };
    for name in STEPS {
        let record = match run.step(name).await {
            Ok(Value::Object(mut observed)) => {
                observed.insert("step".into(), json!(name));
                Value::Object(observed)
            }
            Ok(other) => json!({"step": name, "error": format!("not an object: {other}")}),
            Err(Failure(error)) => json!({"step": name, "error": error}),
        };
        println!("{record}");
    }
    let mut sent: Vec<String> = content_types.lock().unwrap().clone();
    sent.sort();
    sent.dedup();
    println!("{}", json!({"step": "client", "version": aws_sdk_sqs::meta::PKG_VERSION,
                          "content_types": sent}));
}

fn main() {
    let plan: Value = serde_json::from_str(&std::env::args().nth(1).expect("the plan, as JSON"))
        .expect("the plan is JSON");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(scenario(plan));
}
