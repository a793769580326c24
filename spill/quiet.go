package spill

// Settle waits for the spill in progress, if any, and reports it through
// OnSpill. Afterwards the Buffer holds no open file and runs no goroutine
// until a later Emit cuts the next spill: a task calls it to reach a quiet
// point before its process is checkpointed (a file being written while
// CRIU dumps the process would not match the image on restore).
func (b *Buffer) Settle() error {
	if b.err != nil {
		return b.err
	}
	if b.inflight != nil {
		return b.finishInflight()
	}
	return nil
}
