// The scenario of tests/clients/scenario.py through an AWS SDK for JavaScript, unmodified:
// `node scenario.mjs v3|v2 '<plan json>'`. Prints one JSON line per step with what it
// observed (binary values base64-encoded), or {"step", "error"}; it judges nothing (the
// pytest side does, in tests/clients/test_js_sdks.py). The steps mirror python_driver.py.
import { createRequire } from "node:module";
import * as v3 from "@aws-sdk/client-sqs";

const require = createRequire(import.meta.url);
const [sdk, planJson] = process.argv.slice(2);
const plan = JSON.parse(planJson);
const credentials = { accessKeyId: "x", secretAccessKey: "x" };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class SdkError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

function clientFor(name) {
  if (name === "v3") {
    const client = new v3.SQSClient({
      endpoint: plan.endpoint, region: plan.region, credentials, maxAttempts: 1,
    });
    const version = require("@aws-sdk/client-sqs/package.json").version;
    const call = async (action, params) => {
      try {
        return await client.send(new v3[`${action}Command`](params));
      } catch (error) {
        throw new SdkError(error.Code ?? error.name, error.message);
      }
    };
    return { call, version, protocol: "json" };
  }
  const AWS = require("aws-sdk");
  const client = new AWS.SQS({
    endpoint: plan.endpoint, region: plan.region, ...credentials, maxRetries: 0,
    httpOptions: { timeout: 40000 },
  });
  const call = async (action, params) => {
    try {
      return await client[action[0].toLowerCase() + action.slice(1)](params).promise();
    } catch (error) {
      throw new SdkError(error.code, error.message);
    }
  };
  return { call, version: AWS.VERSION, protocol: client.api.protocol };
}

function plain(value) {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).filter(([k]) => k !== "$metadata").map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

const { call, version, protocol } = clientFor(sdk);
const bodies = (messages) => messages.map((m) => m.Body);
let standard = "";
let fifo = "";
let handles = [];

async function receive(url, options) {
  return (await call("ReceiveMessage", { QueueUrl: url, ...options })).Messages ?? [];
}

async function counts(url) {
  const names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"];
  const got = (await call("GetQueueAttributes", { QueueUrl: url, AttributeNames: names }))
    .Attributes;
  return names.map((name) => Number(got[name]));
}

function attributesToSend() {
  return Object.fromEntries(Object.entries(plan.attributes).map(([name, value]) => [
    name,
    value.BinaryValue === undefined ? value
      : { ...value, BinaryValue: Buffer.from(value.BinaryValue, "base64") },
  ]));
}

const steps = {
  async create() {
    standard = (await call("CreateQueue", { QueueName: plan.standard })).QueueUrl;
    fifo = (await call("CreateQueue", {
      QueueName: plan.fifo, Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" },
    })).QueueUrl;
    const fifoAttributes = (await call("GetQueueAttributes", {
      QueueUrl: fifo, AttributeNames: ["All"] })).Attributes;
    return { standard_url: standard, fifo_url: fifo, fifo_attributes: fifoAttributes };
  },
  async send() {
    const sent = await call("SendMessage", {
      QueueUrl: standard, MessageBody: plan.body, MessageAttributes: attributesToSend() });
    const [message] = await receive(standard, {
      MessageAttributeNames: ["All"], WaitTimeSeconds: 2, MaxNumberOfMessages: 1 });
    handles = [message.ReceiptHandle];
    return {
      message_id: sent.MessageId, md5_body: sent.MD5OfMessageBody,
      md5_attributes: sent.MD5OfMessageAttributes,
      received: {
        message_id: message.MessageId, body: message.Body, md5_body: message.MD5OfBody,
        md5_attributes: message.MD5OfMessageAttributes, attributes: message.MessageAttributes ?? {},
      },
    };
  },
  async delete() {
    await call("DeleteMessage", { QueueUrl: standard, ReceiptHandle: handles[0] });
    return { counts_after: await counts(standard) };
  },
  async send_batch() {
    const sent = [];
    let failed = [];
    for (let batch = 0; batch < plan.batches; batch += 1) {
      const entries = Array.from({ length: 10 }, (_, n) => ({
        Id: `e${n}`, MessageBody: `m-${batch}-${n}` }));
      const answer = await call("SendMessageBatch", { QueueUrl: standard, Entries: entries });
      for (const entry of answer.Successful ?? []) {
        sent.push({
          id: entry.Id, body: entries.find((e) => e.Id === entry.Id).MessageBody,
          message_id: entry.MessageId, md5_body: entry.MD5OfMessageBody,
        });
      }
      failed = failed.concat(answer.Failed ?? []);
    }
    return { sent, failed };
  },
  async receive_all() {
    const expected = 10 * plan.batches;
    const received = [];
    let empty = 0;
    handles = [];
    while (received.length < expected && empty < 3) {
      const messages = await receive(standard, {
        MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300 });
      empty = messages.length ? 0 : empty + 1;
      for (const m of messages) {
        received.push([m.MessageId, m.Body]);
        handles.push(m.ReceiptHandle);
      }
    }
    return { received };
  },
  async delete_batch() {
    let deleted = 0;
    let failed = [];
    for (let start = 0; start < handles.length; start += 10) {
      const entries = handles.slice(start, start + 10).map((handle, n) => ({
        Id: `d${n}`, ReceiptHandle: handle }));
      const answer = await call("DeleteMessageBatch", { QueueUrl: standard, Entries: entries });
      deleted += (answer.Successful ?? []).length;
      failed = failed.concat(answer.Failed ?? []);
    }
    const after = await receive(standard, { WaitTimeSeconds: 1 });
    return { deleted, failed, counts_after: await counts(standard), received_after: after.length };
  },
  async long_poll() {
    const started = performance.now();
    const sender = sleep(plan.long_poll_send_after * 1000).then(() => call("SendMessage", {
      QueueUrl: standard, MessageBody: "during the wait" }));
    const messages = await receive(standard, { WaitTimeSeconds: plan.long_poll_wait });
    const elapsed = (performance.now() - started) / 1000;
    await sender;
    for (const m of messages) {
      await call("DeleteMessage", { QueueUrl: standard, ReceiptHandle: m.ReceiptHandle });
    }
    return { elapsed, bodies: bodies(messages) };
  },
  async change_visibility() {
    // A queue of its own, so what earlier steps left behind cannot be received here.
    const url = (await call("CreateQueue", { QueueName: plan.visibility_queue })).QueueUrl;
    await call("SendMessage", { QueueUrl: url, MessageBody: "comes back" });
    const first = await receive(url, { WaitTimeSeconds: 2, VisibilityTimeout: 30 });
    await call("ChangeMessageVisibility", {
      QueueUrl: url, ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 0 });
    const again = await receive(url, { WaitTimeSeconds: 5, VisibilityTimeout: 1 });
    // May arrive after that 1 s on a slow machine: as in SQS it still applies.
    await call("ChangeMessageVisibility", {
      QueueUrl: url, ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 30 });
    await sleep(2000);
    const hidden = await receive(url, { WaitTimeSeconds: 1 });
    await call("DeleteQueue", { QueueUrl: url });
    return { first: bodies(first), reappeared: bodies(again), while_hidden: bodies(hidden) };
  },
  async fifo() {
    const groups = plan.fifo_groups;
    const sent = [];
    for (let n = 0; n < Math.max(...Object.values(groups)); n += 1) {
      for (const [group, count] of Object.entries(groups)) {
        if (n < count) {
          const answer = await call("SendMessage", {
            QueueUrl: fifo, MessageBody: `${group}-${n}`, MessageGroupId: group });
          sent.push([group, `${group}-${n}`, answer.SequenceNumber]);
        }
      }
    }
    const received = [];
    let empty = 0;
    while (received.length < sent.length && empty < 3) {
      const messages = await receive(fifo, {
        MaxNumberOfMessages: 10, WaitTimeSeconds: 1, AttributeNames: ["MessageGroupId"] });
      empty = messages.length ? 0 : empty + 1;
      for (const m of messages) {
        received.push([m.Attributes.MessageGroupId, m.Body]);
        await call("DeleteMessage", { QueueUrl: fifo, ReceiptHandle: m.ReceiptHandle });
      }
    }
    return { sent, received };
  },
  async attributes() {
    await call("SetQueueAttributes", { QueueUrl: standard, Attributes: plan.set_attributes });
    const got = await call("GetQueueAttributes", { QueueUrl: standard, AttributeNames: ["All"] });
    return { got: got.Attributes };
  },
  async tags() {
    await call("TagQueue", { QueueUrl: standard, Tags: plan.tags });
    const afterTag = (await call("ListQueueTags", { QueueUrl: standard })).Tags ?? {};
    await call("UntagQueue", { QueueUrl: standard, TagKeys: plan.untag });
    const afterUntag = (await call("ListQueueTags", { QueueUrl: standard })).Tags ?? {};
    return { after_tag: afterTag, after_untag: afterUntag };
  },
  async list_paging() {
    const urls = [];
    for (let n = 0; n < plan.listed_queues; n += 1) {
      urls.push((await call("CreateQueue", { QueueName: `${plan.listed_prefix}${n}` })).QueueUrl);
    }
    const pages = [];
    let token;
    while (pages.length < 50) {
      const answer = await call("ListQueues", {
        QueueNamePrefix: plan.listed_prefix, MaxResults: plan.page_size,
        ...(token ? { NextToken: token } : {}) });
      pages.push(answer.QueueUrls ?? []);
      token = answer.NextToken;
      if (!token) break;
    }
    for (const url of urls) await call("DeleteQueue", { QueueUrl: url });
    return { pages };
  },
  async purge() {
    const url = (await call("CreateQueue", { QueueName: plan.purge_queue })).QueueUrl;
    for (let n = 0; n < plan.purged_messages; n += 1) {
      await call("SendMessage", { QueueUrl: url, MessageBody: `purged-${n}` });
    }
    const before = await counts(url);
    await call("PurgeQueue", { QueueUrl: url });
    const after = await counts(url);
    const received = await receive(url, { WaitTimeSeconds: 1 });
    await call("DeleteQueue", { QueueUrl: url });
    return { counts_before: before, counts_after: after, received_after: received.length };
  },
  async delete_queue() {
    await call("DeleteQueue", { QueueUrl: standard });
    await call("DeleteQueue", { QueueUrl: fifo });
    let code = null;
    try {
      await call("GetQueueUrl", { QueueName: plan.standard });
    } catch (error) {
      code = error.code;
    }
    const listed = await call("ListQueues", { QueueNamePrefix: plan.prefix });
    return { error_code: code, listed_after: listed.QueueUrls ?? [] };
  },
};

console.log(JSON.stringify({ step: "client", sdk, version, protocol }));
for (const [name, step] of Object.entries(steps)) {
  try {
    console.log(JSON.stringify({ step: name, ...plain(await step()) }));
  } catch (error) {
    console.log(JSON.stringify({ step: name, error: `${error.name}: ${error.message}` }));
  }
}
