package service

import (
	"context"
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestStartHostOnATakenPortLeavesNothingRunning: a host that cannot listen
// (split mode retries a port another process took) must stop the gRPC
// server it built, whose 64 stream workers otherwise run forever.
func TestStartHostOnATakenPortLeavesNothingRunning(t *testing.T) {
	url := testdb.New(t)
	key, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h, err := StartHost(context.Background(), HostConfig{DatabaseURL: url, GRPCAddr: taken.Addr().String(), InternalKey: key})
	if err == nil {
		_ = h.Stop(context.Background())
		t.Fatal("StartHost on a taken port succeeded")
	}
}
