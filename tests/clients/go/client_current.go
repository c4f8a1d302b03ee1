//go:build !debian

// The client of the newest AWS SDK for Go v2, as go.mod pins it: AWS JSON 1.0, the endpoint
// given as BaseEndpoint (the SDK's current way), one attempt per call so that a server error
// is seen, not retried away.
package main

import (
	"runtime/debug"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const sqsModule = "github.com/aws/aws-sdk-go-v2/service/sqs"

func newClient(p plan) (*sqs.Client, obs) {
	client := sqs.New(sqs.Options{
		Region:           p.Region,
		Credentials:      aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("x", "x", "")),
		BaseEndpoint:     aws.String(p.Endpoint),
		RetryMaxAttempts: 1,
	})
	version := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, module := range info.Deps {
			if module.Path == sqsModule {
				version = module.Version
			}
		}
	}
	return client, obs{"version": version, "protocol": client.Options().Protocol.ID().Name}
}

// withGroupIdAttribute asks for MessageGroupId the current way (AttributeNames is deprecated).
func withGroupIdAttribute(in sqs.ReceiveMessageInput) sqs.ReceiveMessageInput {
	in.MessageSystemAttributeNames = []types.MessageSystemAttributeName{
		types.MessageSystemAttributeNameMessageGroupId}
	return in
}
