package jobtracker

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// replyCodec is the JobTracker's gRPC codec: protobuf, as gRPC's own, but
// replies are marshaled into buffers from a pool of its own
// (replyBufferPool). gRPC's codec takes them from its default pool, which
// has no size between 32 KiB and 1 MiB: each map event reply of a reduce
// paging through a long log (10,000 events, some 230 KB compact for a job
// of 100,000 maps on 10,000 trackers) held a 1 MiB buffer until its reduce
// had read it, and the pool kept them after: 850 MB of the JobTracker's
// heap with a thousand such reduces (docs/scaling.md, "compact map event
// replies, in buffers of their size"). The server's
// experimental.BufferPool option does not reach the codec's marshaling.
type replyCodec struct{ pool mem.BufferPool }

// newReplyCodec returns the codec with its pool: gRPC's default sizes and
// every power of two between 32 KiB and 1 MiB, so that a buffer wastes at
// most half its size.
func newReplyCodec() replyCodec {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 17, 18, 19, 20)
	if err != nil {
		panic(fmt.Sprintf("jobtracker: the gRPC buffer pool's sizes: %v", err)) // constant sizes
	}
	return replyCodec{pool: p}
}

// serverCodecOption makes a gRPC server use the codec.
func (c replyCodec) serverCodecOption() grpc.ServerOption { return grpc.ForceServerCodecV2(c) }

var _ encoding.CodecV2 = replyCodec{}

// Name is "proto": the codec is protobuf's.
func (replyCodec) Name() string { return "proto" }

// Marshal marshals v as gRPC's codec does, into a buffer of the codec's
// pool unless it is small enough for gRPC not to pool it.
func (c replyCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, not a proto.Message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size just computed
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := c.pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// Unmarshal unmarshals data into v as gRPC's codec does.
func (c replyCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, not a proto.Message", v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
