package service

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
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

// echoDesc is a one-method gRPC service for the host's tests: it answers
// every call that passes the server's interceptors.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "almoner.test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Echo", Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(emptypb.Empty)
		if err := dec(in); err != nil {
			return nil, err
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: echoMethod}
		return interceptor(ctx, in, info, func(context.Context, any) (any, error) { return &emptypb.Empty{}, nil })
	}}},
}

const echoMethod = "/almoner.test.Echo/Echo"

// echoService registers echoDesc.
type echoService struct{}

func (echoService) Register(r grpc.ServiceRegistrar) { r.RegisterService(&echoDesc, struct{}{}) }
func (echoService) Start(context.Context) error      { return nil }
func (echoService) Stop(context.Context) error       { return nil }

// TestHostCallsItsOwnServicesOverALocalSocket: the clients a host hands
// its services reach the services it hosts over its Unix socket (an
// abstract one, on Linux), signed as over TCP (an unsigned call on the
// socket is refused); the TCP address still serves; once the host stops,
// the socket is gone.
func TestHostCallsItsOwnServicesOverALocalSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the local socket is a Linux abstract socket")
	}
	url := testdb.New(t)
	key, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	var deps Deps
	mod := Module{Name: "echo", Migrations: func() []db.Migrations { return nil },
		New: func(_ context.Context, d Deps) (Service, error) { deps = d; return echoService{}, nil }}
	h, err := StartHost(t.Context(), HostConfig{DatabaseURL: url, GRPCAddr: "127.0.0.1:0", InternalKey: key}, mod)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = h.Stop(context.Background())
		}
	}()
	name, ok := strings.CutPrefix(h.LocalAddr(), "unix-abstract:")
	if !ok {
		t.Fatalf("LocalAddr %q: want an abstract Unix socket", h.LocalAddr())
	}
	cc, err := deps.Dial("echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Invoke(t.Context(), echoMethod, &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Fatalf("a signed call to a hosted service: %v", err)
	}
	for what, addr := range map[string]string{"the socket": h.LocalAddr(), "TCP": h.Addr()} {
		plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		err = plain.Invoke(t.Context(), echoMethod, &emptypb.Empty{}, &emptypb.Empty{})
		_ = plain.Close()
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("an unsigned call over %s: %v, want Unauthenticated", what, err)
		}
	}
	signed, err := grpc.NewClient(h.Addr(), append(key.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := signed.Invoke(t.Context(), echoMethod, &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Errorf("a signed call over TCP: %v", err)
	}
	_ = signed.Close()
	stopped = true
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, err := (&net.Dialer{}).DialContext(t.Context(), "unix", "@"+name); err == nil {
		_ = c.Close()
		t.Error("the local socket still accepts connections after Stop")
	}
}
