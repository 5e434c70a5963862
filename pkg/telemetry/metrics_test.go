package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestObserveRecordsEachSeries: the cached children count into the same
// series as WithLabelValues, one per set of label values.
func TestObserveRecordsEachSeries(t *testing.T) {
	route := "/test/observe/{id}"
	for range 2 {
		ObserveHTTP(route, "GET", 200, time.Millisecond)
	}
	ObserveHTTP(route, "GET", 404, time.Millisecond)
	if got := testutil.ToFloat64(HTTPRequests.WithLabelValues(route, "GET", "200")); got != 2 {
		t.Errorf("200s counted %v, want 2", got)
	}
	if got := testutil.ToFloat64(HTTPRequests.WithLabelValues(route, "GET", "404")); got != 1 {
		t.Errorf("404s counted %v, want 1", got)
	}
	if got := testutil.CollectAndCount(HTTPDuration, "almoner_http_request_duration_seconds"); got == 0 {
		t.Error("no duration recorded")
	}

	intercept := UnaryServerMetrics()
	info := &grpc.UnaryServerInfo{FullMethod: "/almoner.test.v1.TestService/Observe"}
	ok := func(context.Context, any) (any, error) { return nil, nil }
	denied := func(context.Context, any) (any, error) { return nil, status.Error(codes.PermissionDenied, "no") }
	for _, h := range []grpc.UnaryHandler{ok, ok, denied} {
		_, _ = intercept(context.Background(), nil, info, h)
	}
	if got := testutil.ToFloat64(grpcHandled.WithLabelValues("almoner.test.v1.TestService", "Observe", "OK")); got != 2 {
		t.Errorf("OK calls counted %v, want 2", got)
	}
	if got := testutil.ToFloat64(grpcHandled.WithLabelValues("almoner.test.v1.TestService", "Observe", "PermissionDenied")); got != 1 {
		t.Errorf("denied calls counted %v, want 1", got)
	}
	stream := StreamServerMetrics()
	_ = stream(nil, nil, &grpc.StreamServerInfo{FullMethod: info.FullMethod}, func(any, grpc.ServerStream) error { return errors.New("x") })
	if got := testutil.ToFloat64(grpcHandled.WithLabelValues("almoner.test.v1.TestService", "Observe", "Unknown")); got != 1 {
		t.Errorf("a failed stream counted %v, want 1", got)
	}
}
