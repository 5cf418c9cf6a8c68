//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"github.com/sfsweep/sfsweep/training/backend"
)

// The engine as a backend.Accumulator: a step's micro-batches run one after another on the
// stream, each keeping its rows' losses in a slot of the device's loss queue, and the
// step's end copies the queue to the host once and waits once. Forward instead copies each
// micro-batch's losses out and waits for them, which is what an evaluation needs.

// lossSlots is the number of micro-batches whose losses the queue holds (lossSlots·n
// float64 of device memory, 4 MiB at n = 8192): a step of up to lossSlots micro-batches
// reads its losses once, a longer one once per lossSlots.
const lossSlots = 64

var _ backend.Accumulator = (*Engine)(nil)

// lossQueue is the losses of the micro-batches accumulated and not yet read.
type lossQueue struct {
	dev   cu.DevicePtr // (lossSlots, n) float64: each slot a micro-batch's rows
	host  []float64    // (lossSlots·n) where a read copies the slots
	kept  int          // slots written since the last read
	means []float64    // mean losses of micro-batches read, not yet handed over
}

// reset forgets every loss not yet handed over.
func (q *lossQueue) reset() {
	q.kept = 0
	q.means = q.means[:0]
}

// meanRows is a micro-batch's mean loss from its rows' losses, summed in row order: Forward
// and Losses share it, so they give the same bits.
func meanRows(rows []float64) float64 {
	var sum float64
	for _, l := range rows {
		sum += l
	}
	return sum / float64(len(rows))
}

// lossRows is where the loss kernel writes the rows' losses of the current forward pass:
// the next slot of the queue when the pass is queued, else, and in a graph's capture,
// e.losses.
func (e *Engine) lossRows() cu.DevicePtr {
	if e.queued && !e.capturing {
		return e.queue.dev + cu.DevicePtr(8*e.n*e.queue.kept)
	}
	return e.losses
}

// Accumulate runs Forward and Backward on the micro-batch, keeping its rows' losses on the
// device until Losses; it waits for the device only when the queue is full.
func (e *Engine) Accumulate(tokens, targets []int32) error {
	e.ready = false
	if e.closed {
		return errClosed
	}
	if err := backend.CheckBatch("cuda", tokens, targets, e.n, e.cfg.Vocab); err != nil {
		return err
	}
	unlock := e.st.lock()
	defer unlock()
	if e.queue.kept == lossSlots {
		if err := e.readQueue(); err != nil {
			return fmt.Errorf("cuda: Accumulate: %w", err)
		}
	}
	if err := e.stage(tokens, targets); err != nil {
		return fmt.Errorf("cuda: Accumulate: %w", err)
	}
	e.queued = true
	defer func() { e.queued = false }()
	if err := e.passes(); err != nil {
		return fmt.Errorf("cuda: Accumulate: %w", err)
	}
	e.queue.kept++
	return nil
}

// Losses appends the mean losses of the micro-batches accumulated since the last Losses or
// ZeroGrad to dst, in their order, and forgets them. It waits for the stream's work, so a
// failure of any kernel since shows here.
func (e *Engine) Losses(dst []float64) ([]float64, error) {
	if e.closed {
		return dst, errClosed
	}
	unlock := e.st.lock()
	defer unlock()
	if err := e.readQueue(); err != nil {
		return dst, fmt.Errorf("cuda: Losses: %w", err)
	}
	dst = append(dst, e.queue.means...)
	e.queue.means = e.queue.means[:0]
	return dst, nil
}

// readQueue copies the queue's slots written to the host, after the stream's work, and
// turns them into mean losses; with none written it still waits for the stream.
func (e *Engine) readQueue() error {
	q := &e.queue
	if q.kept == 0 {
		return e.st.sync()
	}
	defer e.call(PhaseUpdate, Transfer, false)()
	rows := q.host[:q.kept*e.n]
	if err := dtoh(e.st, rows, q.dev); err != nil {
		return err
	}
	for k := range q.kept {
		q.means = append(q.means, meanRows(rows[k*e.n:(k+1)*e.n]))
	}
	q.kept = 0
	return nil
}

// forwardPass runs the forward pass of the micro-batch staged.
func (e *Engine) forwardPass() error {
	defer e.call(PhaseForward, numCategories, true)()
	if e.gpt2 {
		return e.forwardGPT2()
	}
	return e.forward()
}

// backwardPass runs the backward pass of the last forward pass; it does not wait for it.
func (e *Engine) backwardPass() error {
	defer e.call(PhaseBackward, numCategories, true)()
	if e.gpt2 {
		return e.backwardGPT2()
	}
	return e.backward()
}
