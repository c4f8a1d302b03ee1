//go:build debian

// The client of the AWS SDK for Go v2 as Debian packages it (golang-github-aws-aws-sdk-go-v2-dev,
// service/sqs 1.19, from 2022): the query protocol, which every Go program built on an SDK from
// before the JSON switch still speaks. Built in GOPATH mode over the packaged sources.
package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func newClient(p plan) (*sqs.Client, obs) {
	client := sqs.New(sqs.Options{
		Region:           p.Region,
		Credentials:      aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("x", "x", "")),
		EndpointResolver: sqs.EndpointResolverFromURL(p.Endpoint),
		RetryMaxAttempts: 1,
	})
	return client, obs{"version": "service/sqs " + sqs.ServiceAPIVersion, "protocol": "query"}
}

// withGroupIdAttribute asks for MessageGroupId through AttributeNames, all this SDK has.
func withGroupIdAttribute(in sqs.ReceiveMessageInput) sqs.ReceiveMessageInput {
	in.AttributeNames = []types.QueueAttributeName{"MessageGroupId"}
	return in
}
