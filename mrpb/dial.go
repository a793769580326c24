package mrpb

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// DialOptions are the gRPC options of every connection to a JobTracker
// (clients and TaskTrackers): TLS with tlsCfg (nil: plain TCP; see
// security.TLS.Client), message size limits, and reconnection attempts at
// most 2 s apart, so that a restarted JobTracker is found again at once
// (gRPC's default back-off grows to 2 minutes).
func DialOptions(tlsCfg *tls.Config) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}
}
