package service

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoopRunsOnStartWakeAndStops(t *testing.T) {
	var steps atomic.Int32
	ran := make(chan struct{}, 10)
	l := NewLoop(time.Hour, func(ctx context.Context) {
		steps.Add(1)
		ran <- struct{}{}
	})
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	l.Start()
	waitStep(t, ran) // the first step runs at once, not after an hour
	l.Wake()
	waitStep(t, ran) // a wake runs the next step without the tick
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n := steps.Load()
	l.Wake()
	time.Sleep(20 * time.Millisecond)
	if got := steps.Load(); got != n || n != 2 {
		t.Fatalf("steps = %d then %d after stop, want 2 and no more", n, got)
	}
}

func TestLoopStopWaitsForTheStepOrTheDeadline(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	l := NewLoop(time.Hour, func(ctx context.Context) {
		close(started)
		<-release // a step that ignores its context
	})
	l.Start()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Stop(ctx); err == nil {
		t.Fatal("stop returned before the step ended")
	}
	close(release)
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("stop after the step ended: %v", err)
	}
}

func waitStep(t *testing.T, ran <-chan struct{}) {
	t.Helper()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("no step ran")
	}
}
