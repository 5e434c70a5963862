package authctx

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
)

// echo answers with the principal its handlers were given: the tenant in
// NextPageToken (contacts) or in the body (report exports, a stream).
type echo struct {
	contactsv1.UnimplementedContactServiceServer
	reportsv1.UnimplementedReportServiceServer
}

func (echo) ListContacts(ctx context.Context, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	p, err := Require(ctx, req.GetTenantId(), "contacts:view")
	if err != nil {
		return nil, err
	}
	return &contactsv1.ListContactsResponse{NextPageToken: p.TenantID}, nil
}

func (echo) ExportReport(req *reportsv1.ExportReportRequest, ss grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	p, err := Require(ss.Context(), req.GetTenantId(), "reports:run")
	if err != nil {
		return err
	}
	return ss.Send(&httpbody.HttpBody{Data: []byte(p.TenantID)})
}

// serveEcho starts a server verifying with k (apperr's mapping outside, as
// pkg/service builds it) and returns its address.
func serveEcho(t *testing.T, k *Key) string {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(apperr.UnaryServerInterceptor(logger), k.UnaryServerInterceptor(logger)),
		grpc.ChainStreamInterceptor(apperr.StreamServerInterceptor(logger), k.StreamServerInterceptor(logger)))
	contactsv1.RegisterContactServiceServer(srv, echo{})
	reportsv1.RegisterReportServiceServer(srv, echo{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	c, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServerVerifiesEveryCall(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	addr := serveEcho(t, k)
	p := Principal{TenantID: "t1", KeyID: "k1", KeyPrefix: "ak_test_x", Scopes: []string{"contacts:view", "reports:run"}}
	ctx := context.Background()
	list := &contactsv1.ListContactsRequest{TenantId: "t1"}

	signed := dial(t, addr, k.DialOptions()...)
	resp, err := contactsv1.NewContactServiceClient(signed).ListContacts(NewOutgoingContext(ctx, p), list)
	if err != nil || resp.GetNextPageToken() != "t1" {
		t.Fatalf("signed call: %v %v", resp, err)
	}
	// The same connection without a principal asserts only the service:
	// the handler sees no tenant.
	if _, err := contactsv1.NewContactServiceClient(signed).ListContacts(ctx, list); status.Code(err) != codes.Unauthenticated {
		t.Errorf("service assertion on a tenant's RPC: %v", err)
	}
	stream, err := reportsv1.NewReportServiceClient(signed).ExportReport(NewOutgoingContext(ctx, p), &reportsv1.ExportReportRequest{TenantId: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if body, err := stream.Recv(); err != nil || string(body.GetData()) != "t1" {
		t.Errorf("signed stream: %v %v", body, err)
	}

	plain := dial(t, addr)
	other := dial(t, addr, testKey(t).DialOptions()...)
	stale, _ := k.Sign(p, "/almoner.contacts.v1.ContactService/ListContacts", time.Now().Add(-time.Second))
	for name, cc := range map[string]struct {
		conn *grpc.ClientConn
		md   metadata.MD
	}{
		"unsigned metadata of the old kind": {plain, metadata.Pairs("x-almoner-tenant-id", "t1", "x-almoner-key-id", "k1", "x-almoner-scopes", "contacts:view,reports:run")},
		"signed with another key":           {other, nil},
		"stale":                             {plain, metadata.Pairs(MetadataKey, stale)},
	} {
		cctx := NewOutgoingContext(ctx, p)
		if cc.md != nil {
			cctx = metadata.NewOutgoingContext(cctx, cc.md)
		}
		if _, err := contactsv1.NewContactServiceClient(cc.conn).ListContacts(cctx, list); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: ListContacts %v, want Unauthenticated", name, err)
		}
		s, err := reportsv1.NewReportServiceClient(cc.conn).ExportReport(cctx, &reportsv1.ExportReportRequest{TenantId: "t1"})
		if err == nil {
			_, err = s.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: ExportReport %v, want Unauthenticated", name, err)
		}
	}
	// Health checks stay open: probes carry no assertion.
	if _, err := healthpb.NewHealthClient(plain).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("unsigned health check: %v", err)
	}
}
