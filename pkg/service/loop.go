package service

import (
	"context"
	"sync"
	"time"
)

// Loop is the background half of a runner that claims work by lease (the
// year-end tax runs, the imports): it calls step once at start, then every
// poll interval and whenever woken, until stopped. What a step does — claim,
// work, save a checkpoint — is the runner's; the loop only owns the
// goroutine, so every runner starts, wakes and stops the same way.
type Loop struct {
	poll time.Duration
	step func(ctx context.Context)

	wake   chan struct{}
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// NewLoop returns a stopped loop that runs step every poll.
func NewLoop(poll time.Duration, step func(ctx context.Context)) *Loop {
	return &Loop{poll: poll, step: step, wake: make(chan struct{}, 1)}
}

// Start runs the loop in a goroutine of its own.
func (l *Loop) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTicker(l.poll)
		defer t.Stop()
		for {
			l.step(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-l.wake:
			}
		}
	}()
}

// Wake runs the next step at once (work was just queued here) instead of
// at the next tick; a wake while one is pending is dropped.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Stop cancels the step in hand and waits for it to return, or for ctx. A
// step must stop at its context's end without saving half its work, so
// that the lease it holds runs out for another replica or the next start.
// Stopping a loop never started does nothing.
func (l *Loop) Stop(ctx context.Context) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	ch := make(chan struct{})
	go func() { l.done.Wait(); close(ch) }()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
