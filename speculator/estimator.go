package speculator

import (
	"fmt"
	"math"
	"time"
)

// priorRefGB is the image size, in GB (1e9 bytes), of the second pseudo
// point that carries the prior image throughput into the fit.
const priorRefGB = 1.0

// CloneMeasurement is what one clone the system made cost.
type CloneMeasurement struct {
	// ImageBytes is the size of the CRIU image.
	ImageBytes int64
	// Dump and Restore are the wall times of the dump (leave-running) and
	// of the restore, quiesce included in Dump, and moving the image to
	// the target in either: together they are the process part of the
	// clone cost, t_vm + image/B.
	Dump, Restore time.Duration
	// TransferBytes is the file set copied to the target tracker;
	// Transfer is how long it took (the file set part, file set/B_copy).
	TransferBytes int64
	Transfer      time.Duration
}

// CloneCost is an estimated clone cost with the inputs behind it:
// Total = Beta × (TVM + ImageBytes/ImageBps + FileSetBytes/CopyBps).
type CloneCost struct {
	Beta         float64
	TVM          time.Duration
	ImageBytes   int64
	ImageBps     float64
	FileSetBytes int64
	CopyBps      float64
	// Undamped is the cost before the damping factor.
	Undamped time.Duration
	// Total is Beta × Undamped.
	Total time.Duration
}

// Estimator estimates what a clone costs. Its inputs t_vm (fixed cost of
// dump plus restore), B (image throughput of dump plus restore) and B_copy
// (file-set copy throughput) start from configured priors and are updated
// from measured clones with exponential smoothing of weight w:
//
//   - t_vm and B are the intercept and inverse slope of an exponentially
//     weighted least-squares line through the points (image bytes, dump +
//     restore time). The prior enters as two points on the prior line, at
//     0 and 1 GB, of weight 1/2 each; every measurement multiplies the old
//     weights by 1-w and adds its point with weight w. When the points do
//     not define a rising line (all images of one size, or a falling
//     fit), B is kept and t_vm is the weighted mean time less the mean
//     image size over B; a negative intercept is replaced by a line
//     through the origin (t_vm = 0).
//   - B_copy ← (1-w)·B_copy + w·TransferBytes/Transfer, from transfers of
//     at least MinSampleBytes.
//
// An Estimator is not safe for concurrent use; its owner serialises calls.
type Estimator struct {
	p EstimatorParams
	// Weighted moments of the points (x = image GB, y = seconds); the
	// weights always sum to 1.
	mx, my, mxx, mxy float64
	tvm              float64 // seconds
	imgBps           float64
	copyBps          float64
	samples          int
}

// NewEstimator returns an estimator at its priors.
func NewEstimator(p EstimatorParams) *Estimator {
	e := &Estimator{p: p, tvm: p.TVM.Seconds(), imgBps: p.ImageBps, copyBps: p.CopyBps}
	y0 := e.tvm
	y1 := e.tvm + priorRefGB*1e9/e.imgBps
	e.mx = 0.5 * priorRefGB
	e.my = 0.5*y0 + 0.5*y1
	e.mxx = 0.5 * priorRefGB * priorRefGB
	e.mxy = 0.5 * priorRefGB * y1
	return e
}

// Inputs returns the current t_vm, B and B_copy, and how many measurements
// have been taken into account.
func (e *Estimator) Inputs() (tvm time.Duration, imageBps, copyBps float64, samples int) {
	return seconds(e.tvm), e.imgBps, e.copyBps, e.samples
}

// Cost estimates the cost of cloning an attempt whose image is imageBytes
// and whose file set is fileSetBytes.
func (e *Estimator) Cost(imageBytes, fileSetBytes int64) CloneCost {
	und := e.tvm + float64(imageBytes)/e.imgBps + float64(fileSetBytes)/e.copyBps
	return CloneCost{
		Beta:         e.p.Beta,
		TVM:          seconds(e.tvm),
		ImageBytes:   imageBytes,
		ImageBps:     e.imgBps,
		FileSetBytes: fileSetBytes,
		CopyBps:      e.copyBps,
		Undamped:     seconds(und),
		Total:        seconds(e.p.Beta * und),
	}
}

// Observe takes a measured clone into account. It fails, changing
// nothing, on a negative size or time, or on a measurement with no time
// at all.
func (e *Estimator) Observe(m CloneMeasurement) error {
	if m.ImageBytes < 0 || m.TransferBytes < 0 || m.Dump < 0 || m.Restore < 0 || m.Transfer < 0 {
		return fmt.Errorf("clone measurement %+v: negative size or time", m)
	}
	if m.Dump+m.Restore <= 0 && m.Transfer <= 0 {
		return fmt.Errorf("clone measurement %+v: no dump, restore or transfer time", m)
	}
	w := e.p.Smoothing
	if t := m.Dump + m.Restore; t > 0 {
		x, y := float64(m.ImageBytes)/1e9, t.Seconds()
		e.mx = (1-w)*e.mx + w*x
		e.my = (1-w)*e.my + w*y
		e.mxx = (1-w)*e.mxx + w*x*x
		e.mxy = (1-w)*e.mxy + w*x*y
		e.fit()
	}
	if m.Transfer > 0 && m.TransferBytes > 0 && m.TransferBytes >= e.p.MinSampleBytes {
		e.copyBps = (1-w)*e.copyBps + w*float64(m.TransferBytes)/m.Transfer.Seconds()
	}
	e.samples++
	return nil
}

// fit recomputes t_vm and B from the weighted moments.
func (e *Estimator) fit() {
	vx := e.mxx - e.mx*e.mx
	cxy := e.mxy - e.mx*e.my
	// Relative floor so that rounding in all-equal sizes reads as "no spread".
	if vx <= 1e-9*(e.mxx+1e-12) || cxy <= 0 {
		e.tvm = e.my - e.mx*1e9/e.imgBps
		if e.tvm < 0 {
			e.tvm = 0
		}
		return
	}
	slope := cxy / vx // seconds per GB
	icpt := e.my - slope*e.mx
	if icpt < 0 {
		slope = e.mxy / e.mxx
		icpt = 0
		if slope <= 0 {
			return
		}
	}
	e.tvm = icpt
	e.imgBps = 1e9 / slope
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
