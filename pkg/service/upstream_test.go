package service

import (
	"errors"
	"testing"

	"google.golang.org/grpc"

	"github.com/almoner/almoner/pkg/apperr"
)

func TestUpstream(t *testing.T) {
	var conn grpc.ClientConnInterface = &grpc.ClientConn{}
	tests := []struct {
		name     string
		dial     func(string) (grpc.ClientConnInterface, error)
		wantConn bool
		wantMsg  string
	}{
		{name: "dialled", dial: func(string) (grpc.ClientConnInterface, error) { return conn, nil }, wantConn: true},
		{name: "no dialer", dial: nil, wantMsg: "The orders service is not configured."},
		{name: "no address", dial: func(string) (grpc.ClientConnInterface, error) { return nil, errors.New("no address") },
			wantMsg: "The orders service is not reachable."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			dial := tc.dial
			if dial != nil {
				dial = func(name string) (grpc.ClientConnInterface, error) {
					calls++
					if name != "orders" {
						t.Errorf("dialled %q, want orders", name)
					}
					return tc.dial(name)
				}
			}
			u := NewUpstream(dial, "orders")
			for range 3 {
				got, err := u.Conn()
				if tc.wantConn {
					if err != nil || got != conn {
						t.Fatalf("Conn = %v, %v; want the dialled connection", got, err)
					}
					continue
				}
				e, ok := apperr.As(err)
				if !ok || e.Kind != apperr.KindUnavailable || e.Message != tc.wantMsg {
					t.Fatalf("Conn error = %v, want Unavailable %q", err, tc.wantMsg)
				}
			}
			if dial != nil && calls != 1 {
				t.Errorf("dialled %d times, want once", calls)
			}
		})
	}
}
