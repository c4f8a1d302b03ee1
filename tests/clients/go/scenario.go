// The scenario of tests/clients/scenario.py through the AWS SDK for Go v2 (service/sqs),
// unmodified: `sqs-scenario '<plan json>'`. The steps are this file's, the same for both SDK
// builds; the client comes from client_current.go (the newest SDK from the module proxy,
// go.mod, AWS JSON 1.0) or, built with `-tags debian` in GOPATH mode, client_debian.go
// (Debian's packaged SDK, query protocol). Prints one JSON line per step with what it observed
// (binary values base64-encoded, as encoding/json writes []byte), or {"step", "error"}; it
// judges nothing (the pytest side does, in tests/clients/test_go_sdk.py). The steps mirror
// python_driver.py.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

type obs = map[string]any

type plan struct {
	Endpoint          string                       `json:"endpoint"`
	Region            string                       `json:"region"`
	Prefix            string                       `json:"prefix"`
	Standard          string                       `json:"standard"`
	Fifo              string                       `json:"fifo"`
	ListedPrefix      string                       `json:"listed_prefix"`
	ListedQueues      int                          `json:"listed_queues"`
	PageSize          int32                        `json:"page_size"`
	Body              string                       `json:"body"`
	Attributes        map[string]map[string]string `json:"attributes"`
	Batches           int                          `json:"batches"`
	SetAttributes     map[string]string            `json:"set_attributes"`
	Tags              map[string]string            `json:"tags"`
	Untag             []string                     `json:"untag"`
	FifoGroups        map[string]int               `json:"fifo_groups"`
	PurgedMessages    int                          `json:"purged_messages"`
	VisibilityQueue   string                       `json:"visibility_queue"`
	PurgeQueue        string                       `json:"purge_queue"`
	LongPollWait      int32                        `json:"long_poll_wait"`
	LongPollSendAfter float64                      `json:"long_poll_send_after"`
}

type run struct {
	p        plan
	c        *sqs.Client
	ctx      context.Context
	standard *string
	fifo     *string
	handles  []string
}

func (r *run) receive(url *string, in sqs.ReceiveMessageInput) []types.Message {
	in.QueueUrl = url
	out, err := r.c.ReceiveMessage(r.ctx, &in)
	check(err)
	return out.Messages
}

func (r *run) counts(url *string) []int {
	out, err := r.c.GetQueueAttributes(r.ctx, &sqs.GetQueueAttributesInput{QueueUrl: url,
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages",
			"ApproximateNumberOfMessagesNotVisible"}})
	check(err)
	a, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	b, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return []int{a, b}
}

func (r *run) create(name string) *string {
	out, err := r.c.CreateQueue(r.ctx, &sqs.CreateQueueInput{QueueName: &name})
	check(err)
	return out.QueueUrl
}

func (r *run) drop(url *string) {
	_, err := r.c.DeleteQueue(r.ctx, &sqs.DeleteQueueInput{QueueUrl: url})
	check(err)
}

func (r *run) send(url *string, body string) *sqs.SendMessageOutput {
	out, err := r.c.SendMessage(r.ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: &body})
	check(err)
	return out
}

func (r *run) remove(url *string, handle *string) {
	_, err := r.c.DeleteMessage(r.ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle})
	check(err)
}

func bodies(messages []types.Message) []string {
	out := []string{}
	for _, m := range messages {
		out = append(out, *m.Body)
	}
	return out
}

func attributesOut(in map[string]types.MessageAttributeValue) obs {
	out := obs{}
	for name, v := range in {
		value := obs{"DataType": *v.DataType}
		if v.StringValue != nil {
			value["StringValue"] = *v.StringValue
		}
		if v.BinaryValue != nil {
			value["BinaryValue"] = v.BinaryValue
		}
		out[name] = value
	}
	return out
}

func (r *run) steps() []func() (string, obs) {
	return []func() (string, obs){
		func() (string, obs) {
			out, err := r.c.CreateQueue(r.ctx, &sqs.CreateQueueInput{QueueName: &r.p.Standard})
			check(err)
			r.standard = out.QueueUrl
			out, err = r.c.CreateQueue(r.ctx, &sqs.CreateQueueInput{QueueName: &r.p.Fifo,
				Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
			check(err)
			r.fifo = out.QueueUrl
			got, err := r.c.GetQueueAttributes(r.ctx, &sqs.GetQueueAttributesInput{QueueUrl: r.fifo,
				AttributeNames: []types.QueueAttributeName{"All"}})
			check(err)
			return "create", obs{"standard_url": *r.standard, "fifo_url": *r.fifo,
				"fifo_attributes": got.Attributes}
		},
		func() (string, obs) {
			attributes := map[string]types.MessageAttributeValue{}
			for name, v := range r.p.Attributes {
				value := types.MessageAttributeValue{DataType: aws.String(v["DataType"])}
				if s, ok := v["StringValue"]; ok {
					value.StringValue = aws.String(s)
				}
				if b, ok := v["BinaryValue"]; ok {
					value.BinaryValue, _ = base64.StdEncoding.DecodeString(b)
				}
				attributes[name] = value
			}
			sent, err := r.c.SendMessage(r.ctx, &sqs.SendMessageInput{QueueUrl: r.standard,
				MessageBody: &r.p.Body, MessageAttributes: attributes})
			check(err)
			m := r.receive(r.standard, sqs.ReceiveMessageInput{MessageAttributeNames: []string{"All"},
				WaitTimeSeconds: 2, MaxNumberOfMessages: 1})[0]
			r.handles = []string{*m.ReceiptHandle}
			return "send", obs{"message_id": sent.MessageId, "md5_body": sent.MD5OfMessageBody,
				"md5_attributes": sent.MD5OfMessageAttributes, "received": obs{
					"message_id": m.MessageId, "body": m.Body, "md5_body": m.MD5OfBody,
					"md5_attributes": m.MD5OfMessageAttributes,
					"attributes":     attributesOut(m.MessageAttributes)}}
		},
		func() (string, obs) {
			r.remove(r.standard, &r.handles[0])
			return "delete", obs{"counts_after": r.counts(r.standard)}
		},
		func() (string, obs) {
			sent, failed := []obs{}, []any{}
			for batch := 0; batch < r.p.Batches; batch++ {
				entries, bodyOf := []types.SendMessageBatchRequestEntry{}, map[string]string{}
				for n := 0; n < 10; n++ {
					id, body := fmt.Sprintf("e%d", n), fmt.Sprintf("m-%d-%d", batch, n)
					bodyOf[id] = body
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(id),
						MessageBody: aws.String(body)})
				}
				out, err := r.c.SendMessageBatch(r.ctx, &sqs.SendMessageBatchInput{QueueUrl: r.standard,
					Entries: entries})
				check(err)
				for _, e := range out.Successful {
					sent = append(sent, obs{"id": e.Id, "body": bodyOf[*e.Id], "message_id": e.MessageId,
						"md5_body": e.MD5OfMessageBody})
				}
				for _, e := range out.Failed {
					failed = append(failed, e)
				}
			}
			return "send_batch", obs{"sent": sent, "failed": failed}
		},
		func() (string, obs) {
			received, empty := [][]string{}, 0
			r.handles = nil
			for len(received) < 10*r.p.Batches && empty < 3 {
				messages := r.receive(r.standard, sqs.ReceiveMessageInput{MaxNumberOfMessages: 10,
					WaitTimeSeconds: 1, VisibilityTimeout: 300})
				if len(messages) == 0 {
					empty++
				} else {
					empty = 0
				}
				for _, m := range messages {
					received = append(received, []string{*m.MessageId, *m.Body})
					r.handles = append(r.handles, *m.ReceiptHandle)
				}
			}
			return "receive_all", obs{"received": received}
		},
		func() (string, obs) {
			deleted, failed := 0, []any{}
			for start := 0; start < len(r.handles); start += 10 {
				entries := []types.DeleteMessageBatchRequestEntry{}
				for n, h := range r.handles[start:min(start+10, len(r.handles))] {
					entries = append(entries, types.DeleteMessageBatchRequestEntry{
						Id: aws.String(fmt.Sprintf("d%d", n)), ReceiptHandle: aws.String(h)})
				}
				out, err := r.c.DeleteMessageBatch(r.ctx, &sqs.DeleteMessageBatchInput{
					QueueUrl: r.standard, Entries: entries})
				check(err)
				deleted += len(out.Successful)
				for _, e := range out.Failed {
					failed = append(failed, e)
				}
			}
			after := r.receive(r.standard, sqs.ReceiveMessageInput{WaitTimeSeconds: 1})
			return "delete_batch", obs{"deleted": deleted, "failed": failed,
				"counts_after": r.counts(r.standard), "received_after": len(after)}
		},
		func() (string, obs) {
			started := time.Now()
			done := make(chan struct{})
			go func() {
				time.Sleep(time.Duration(r.p.LongPollSendAfter * float64(time.Second)))
				r.send(r.standard, "during the wait")
				close(done)
			}()
			messages := r.receive(r.standard, sqs.ReceiveMessageInput{WaitTimeSeconds: r.p.LongPollWait})
			elapsed := time.Since(started).Seconds()
			<-done
			for _, m := range messages {
				r.remove(r.standard, m.ReceiptHandle)
			}
			return "long_poll", obs{"elapsed": elapsed, "bodies": bodies(messages)}
		},
		func() (string, obs) {
			// A queue of its own, so what earlier steps left behind cannot be received here.
			url := r.create(r.p.VisibilityQueue)
			r.send(url, "comes back")
			first := r.receive(url, sqs.ReceiveMessageInput{WaitTimeSeconds: 2, VisibilityTimeout: 30})
			_, err := r.c.ChangeMessageVisibility(r.ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: url, ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 0})
			check(err)
			again := r.receive(url, sqs.ReceiveMessageInput{WaitTimeSeconds: 5, VisibilityTimeout: 1})
			// May arrive after that 1 s on a slow machine: as in SQS it still applies.
			_, err = r.c.ChangeMessageVisibility(r.ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: url, ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 30})
			check(err)
			time.Sleep(2 * time.Second)
			hidden := r.receive(url, sqs.ReceiveMessageInput{WaitTimeSeconds: 1})
			r.drop(url)
			return "change_visibility", obs{"first": bodies(first), "reappeared": bodies(again),
				"while_hidden": bodies(hidden)}
		},
		func() (string, obs) {
			most, total := 0, 0
			for _, count := range r.p.FifoGroups {
				most, total = max(most, count), total+count
			}
			sent := [][]string{}
			for n := 0; n < most; n++ {
				for _, group := range []string{"g-a", "g-b"} {
					if n < r.p.FifoGroups[group] {
						body := fmt.Sprintf("%s-%d", group, n)
						out, err := r.c.SendMessage(r.ctx, &sqs.SendMessageInput{QueueUrl: r.fifo,
							MessageBody: &body, MessageGroupId: aws.String(group)})
						check(err)
						sent = append(sent, []string{group, body, *out.SequenceNumber})
					}
				}
			}
			received, empty := [][]string{}, 0
			for len(received) < total && empty < 3 {
				messages := r.receive(r.fifo, withGroupIdAttribute(sqs.ReceiveMessageInput{
					MaxNumberOfMessages: 10, WaitTimeSeconds: 1}))
				if len(messages) == 0 {
					empty++
				} else {
					empty = 0
				}
				for _, m := range messages {
					received = append(received, []string{m.Attributes["MessageGroupId"], *m.Body})
					r.remove(r.fifo, m.ReceiptHandle)
				}
			}
			return "fifo", obs{"sent": sent, "received": received}
		},
		func() (string, obs) {
			_, err := r.c.SetQueueAttributes(r.ctx, &sqs.SetQueueAttributesInput{QueueUrl: r.standard,
				Attributes: r.p.SetAttributes})
			check(err)
			got, err := r.c.GetQueueAttributes(r.ctx, &sqs.GetQueueAttributesInput{QueueUrl: r.standard,
				AttributeNames: []types.QueueAttributeName{"All"}})
			check(err)
			return "attributes", obs{"got": got.Attributes}
		},
		func() (string, obs) {
			_, err := r.c.TagQueue(r.ctx, &sqs.TagQueueInput{QueueUrl: r.standard, Tags: r.p.Tags})
			check(err)
			afterTag, err := r.c.ListQueueTags(r.ctx, &sqs.ListQueueTagsInput{QueueUrl: r.standard})
			check(err)
			_, err = r.c.UntagQueue(r.ctx, &sqs.UntagQueueInput{QueueUrl: r.standard, TagKeys: r.p.Untag})
			check(err)
			afterUntag, err := r.c.ListQueueTags(r.ctx, &sqs.ListQueueTagsInput{QueueUrl: r.standard})
			check(err)
			return "tags", obs{"after_tag": orEmpty(afterTag.Tags), "after_untag": orEmpty(afterUntag.Tags)}
		},
		func() (string, obs) {
			urls := []*string{}
			for n := 0; n < r.p.ListedQueues; n++ {
				out, err := r.c.CreateQueue(r.ctx, &sqs.CreateQueueInput{
					QueueName: aws.String(fmt.Sprintf("%s%d", r.p.ListedPrefix, n))})
				check(err)
				urls = append(urls, out.QueueUrl)
			}
			pages := [][]string{}
			var token *string
			for len(pages) < 50 {
				out, err := r.c.ListQueues(r.ctx, &sqs.ListQueuesInput{QueueNamePrefix: &r.p.ListedPrefix,
					MaxResults: &r.p.PageSize, NextToken: token})
				check(err)
				pages = append(pages, append([]string{}, out.QueueUrls...))
				token = out.NextToken
				if token == nil || *token == "" {
					break
				}
			}
			for _, url := range urls {
				_, err := r.c.DeleteQueue(r.ctx, &sqs.DeleteQueueInput{QueueUrl: url})
				check(err)
			}
			return "list_paging", obs{"pages": pages}
		},
		func() (string, obs) {
			url := r.create(r.p.PurgeQueue)
			for n := 0; n < r.p.PurgedMessages; n++ {
				r.send(url, fmt.Sprintf("purged-%d", n))
			}
			before := r.counts(url)
			_, err := r.c.PurgeQueue(r.ctx, &sqs.PurgeQueueInput{QueueUrl: url})
			check(err)
			after := r.counts(url)
			received := r.receive(url, sqs.ReceiveMessageInput{WaitTimeSeconds: 1})
			r.drop(url)
			return "purge", obs{"counts_before": before, "counts_after": after,
				"received_after": len(received)}
		},
		func() (string, obs) {
			for _, url := range []*string{r.standard, r.fifo} {
				_, err := r.c.DeleteQueue(r.ctx, &sqs.DeleteQueueInput{QueueUrl: url})
				check(err)
			}
			var code any
			_, err := r.c.GetQueueUrl(r.ctx, &sqs.GetQueueUrlInput{QueueName: &r.p.Standard})
			var apiError smithy.APIError
			if errors.As(err, &apiError) {
				code = apiError.ErrorCode()
			}
			listed, err := r.c.ListQueues(r.ctx, &sqs.ListQueuesInput{QueueNamePrefix: &r.p.Prefix})
			check(err)
			return "delete_queue", obs{"error_code": code, "listed_after": append([]string{}, listed.QueueUrls...)}
		},
	}
}

func orEmpty(tags map[string]string) map[string]string {
	if tags == nil {
		return map[string]string{}
	}
	return tags
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// stepFailure carries an SDK error out of a step to the loop that reports it.
type stepFailure struct{ err error }

func check(err error) {
	if err != nil {
		panic(stepFailure{err})
	}
}

func emit(record obs) {
	line, err := json.Marshal(record)
	if err != nil {
		line, _ = json.Marshal(obs{"step": record["step"], "error": err.Error()})
	}
	fmt.Println(string(line))
}

// runStep runs one step; a failure is printed as {"step", "error"} and the next step runs.
func runStep(index int, step func() (string, obs)) {
	names := []string{"create", "send", "delete", "send_batch", "receive_all", "delete_batch",
		"long_poll", "change_visibility", "fifo", "attributes", "tags", "list_paging", "purge",
		"delete_queue"}
	defer func() {
		if failure := recover(); failure != nil {
			emit(obs{"step": names[index], "error": fmt.Sprint(failure)})
		}
	}()
	name, record := step()
	record["step"] = name
	emit(record)
}

func main() {
	var p plan
	if err := json.Unmarshal([]byte(os.Args[1]), &p); err != nil {
		panic(err)
	}
	client, about := newClient(p)
	about["step"] = "client"
	emit(about)
	r := &run{p: p, c: client, ctx: context.Background()}
	for index, step := range r.steps() {
		runStep(index, step)
	}
}
