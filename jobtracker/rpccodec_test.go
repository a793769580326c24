package jobtracker

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"gomr/mrpb"
)

// countingPool is a mem.BufferPool that records the sizes asked of it.
type countingPool struct {
	mem.BufferPool
	got []int
}

func (p *countingPool) Get(n int) *[]byte {
	p.got = append(p.got, n)
	return p.BufferPool.Get(n)
}

// TestReplyCodec: the JobTracker's codec marshals and unmarshals as
// protobuf does; a reply too large for gRPC to leave unpooled comes from
// the codec's pool, whose buffer for a map event reply of some 230 KB is
// 256 KiB, not gRPC's default 1 MiB; a value that is not a message is
// refused by name.
func TestReplyCodec(t *testing.T) {
	c := newReplyCodec()
	if c.Name() != "proto" {
		t.Fatalf("codec name %q", c.Name())
	}
	pool := &countingPool{BufferPool: c.pool}
	c.pool = pool
	for _, events := range []int{1, 10000} {
		want := &mrpb.MapEventsResponse{}
		for i := range events {
			want.Events = append(want.Events, &mrpb.MapEvent{MapTask: int32(i), Final: true, Attempt: 1, Address: int32(i%5000 + 1)})
		}
		want.Addresses = []string{"lg-host-00042:50060"}
		data, err := c.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got mrpb.MapEventsResponse
		if err := c.Unmarshal(data, &got); err != nil || !proto.Equal(&got, want) {
			t.Fatalf("%d events: round trip %v", events, err)
		}
		size := proto.Size(want)
		pooled := !mem.IsBelowBufferPoolingThreshold(size)
		if asked := len(pool.got) > 0 && pool.got[len(pool.got)-1] == size; asked != pooled {
			t.Errorf("%d events (%d bytes): asked the pool %v, want %v (%v)", events, size, asked, pooled, pool.got)
		}
		data.Free()
	}
	if b := newReplyCodec().pool.Get(230000); cap(*b) != 256<<10 {
		t.Errorf("a buffer for 230,000 bytes has %d, want 256 KiB", cap(*b))
	}
	if b := mem.DefaultBufferPool().Get(230000); cap(*b) != 1<<20 {
		t.Logf("gRPC's default pool now gives %d bytes for 230,000 (1 MiB when this was written)", cap(*b))
	}
	if _, err := c.Marshal(fmt.Stringer(nil)); err == nil || !strings.Contains(err.Error(), "not a proto.Message") {
		t.Errorf("marshal of a non-message: %v", err)
	}
	if err := c.Unmarshal(nil, 42); err == nil || !strings.Contains(err.Error(), "not a proto.Message") {
		t.Errorf("unmarshal into a non-message: %v", err)
	}
}
