package jobtracker

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/stats"

	"gomr/mrpb"
)

// heartbeatServerBuckets are the bounds of gomr_heartbeat_server_seconds:
// 1 ms wide from 1 to 100 ms, so that a quantile near the 50 ms target is
// known to within a millisecond, coarser below and beyond.
var heartbeatServerBuckets = func() []float64 {
	b := []float64{0.0001, 0.0002, 0.0003, 0.0005, 0.00075}
	for ms := 1; ms <= 100; ms++ {
		b = append(b, float64(ms)/1000)
	}
	for _, ms := range []float64{110, 120, 130, 140, 150, 175, 200, 250, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000} {
		b = append(b, ms/1000)
	}
	return b
}()

// newHeartbeatServerHistogram is gomr_heartbeat_server_seconds.
func newHeartbeatServerHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gomr_heartbeat_server_seconds",
		Help:    "Time a TaskTracker heartbeat spent in the JobTracker's gRPC server, from the start of its stream's handling to its reply and status handed to the transport (1 ms buckets from 1 to 100 ms).",
		Buckets: heartbeatServerBuckets,
	})
}

// rpcTimer is the gRPC server's stats handler: it times each Heartbeat
// call in the server, from the start of its stream's handling (TagRPC,
// once the transport has read its headers and a goroutine runs it) to its
// end (stats.End: the reply and the status written to the transport's
// buffers), into gomr_heartbeat_server_seconds. That is the handler's time
// (gomr_heartbeat_duration_seconds) plus the request's reading and
// decoding and the reply's encoding; it leaves out only the socket and the
// transport's own goroutines. Other calls are not timed.
type rpcTimer struct {
	heartbeat prometheus.Histogram
}

// rpcStartKey keys a timed call's start in its context.
type rpcStartKey struct{}

// TagRPC notes the start of a Heartbeat call.
func (r *rpcTimer) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if info.FullMethodName != mrpb.JobTracker_Heartbeat_FullMethodName {
		return ctx
	}
	return context.WithValue(ctx, rpcStartKey{}, time.Now())
}

// HandleRPC observes a timed call's end.
func (r *rpcTimer) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.End); !ok {
		return
	}
	if start, ok := ctx.Value(rpcStartKey{}).(time.Time); ok {
		r.heartbeat.Observe(time.Since(start).Seconds())
	}
}

// TagConn leaves the connection's context as it is.
func (r *rpcTimer) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn does nothing: connections are not timed.
func (r *rpcTimer) HandleConn(context.Context, stats.ConnStats) {}
