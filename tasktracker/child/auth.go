package child

import (
	"context"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The umbilical authenticates each child: its tracker gives every attempt
// a random token, in TokenEnv at launch (a clone gets its own on its
// control pipe), and the child sends its attempt id and token with every
// call, as Hadoop's child authenticates with the job token. The tracker
// answers only the attempt the token belongs to.
const (
	// TokenEnv carries the attempt's umbilical token to the child.
	TokenEnv = "GOMR_UMBILICAL_TOKEN"
	// AttemptMD and TokenMD are the gRPC metadata keys of every
	// umbilical call.
	AttemptMD = "gomr-attempt"
	TokenMD   = "gomr-token"
)

// attemptCreds sends an attempt's id and token with every call.
type attemptCreds struct{ attempt, token string }

func (c attemptCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{AttemptMD: c.attempt, TokenMD: c.token}, nil
}

// RequireTransportSecurity is false: the umbilical is a loopback
// connection between a tracker and its own children.
func (attemptCreds) RequireTransportSecurity() bool { return false }

// dialUmbilical connects to a tracker's umbilical as attempt, with token.
func dialUmbilical(addr, attempt, token string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(attemptCreds{attempt: attempt, token: token}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
}

// launchToken is the token this process was started with.
func launchToken() string { return os.Getenv(TokenEnv) }
