package apptest

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanRecorder keeps the finished spans of the traces a test watches, and
// nothing else, so a long run does not hold every span in memory.
type spanRecorder struct {
	mu      sync.Mutex
	watched map[string][]sdktrace.ReadOnlySpan
}

var recorder = &spanRecorder{watched: map[string][]sdktrace.ReadOnlySpan{}}

// WatchTrace starts keeping the spans of the trace with that id (32 hex).
func WatchTrace(traceID string) {
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	if _, ok := recorder.watched[traceID]; !ok {
		recorder.watched[traceID] = nil
	}
}

// Spans returns the finished spans of a watched trace.
func Spans(traceID string) []sdktrace.ReadOnlySpan {
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), recorder.watched[traceID]...)
}

func (r *spanRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (r *spanRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().TraceID().String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if spans, ok := r.watched[id]; ok {
		r.watched[id] = append(spans, s)
	}
}

func (r *spanRecorder) Shutdown(context.Context) error   { return nil }
func (r *spanRecorder) ForceFlush(context.Context) error { return nil }
