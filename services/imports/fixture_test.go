package imports

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/testdb"
)

// fixture is the imports service on a fresh database, served on a real
// loopback gRPC server beside fake contacts and orders import services
// (test doubles of the collaborators the runner calls), with a client
// that asserts a principal of tenant.
type fixture struct {
	pool     *pgxpool.Pool
	svc      *Service
	client   importsv1.ImportServiceClient
	fake     *fakeServices
	gifts    *fakeGifts
	tenant   uuid.UUID
	dial     func(string) (grpc.ClientConnInterface, error)
	loopback *grpc.ClientConn
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, Migrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	key, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, _ := service.NewGRPCServer(logger, key)
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
		key.DialOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{pool: pool, fake: newFakeServices(), tenant: uuid.New(), loopback: conn}
	f.dial = func(name string) (grpc.ClientConnInterface, error) {
		if name != ContactsService && name != OrdersService {
			return nil, fmt.Errorf("no service %s", name)
		}
		return conn, nil
	}
	cfg.NoRunner = true
	f.svc = New(pool, cfg, logger, f.dial)
	f.svc.Register(srv)
	contactsv1.RegisterContactImportServiceServer(srv, &fakeContacts{f: f.fake})
	f.gifts = &fakeGifts{f: f.fake}
	ordersv1.RegisterGiftImportServiceServer(srv, f.gifts)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	f.client = importsv1.NewImportServiceClient(conn)
	return f
}

// as returns ctx asserting a key of tenant with scopes (imports:manage
// when none are given), whose tenant's currency is USD.
func as(ctx context.Context, tenant uuid.UUID, scs ...string) context.Context {
	if len(scs) == 0 {
		scs = []string{scopes.ImportsManage}
	}
	return authctx.NewOutgoingContext(ctx, authctx.Principal{TenantID: tenant.String(), KeyID: uuid.NewString(), KeyPrefix: "test1234",
		Scopes: scs, Currency: "USD"})
}

// header is an upload's first message.
func header(tenant uuid.UUID, kind, format string) *importsv1.ImportHeader {
	ct := "text/csv"
	if format == "jsonl" {
		ct = "application/x-ndjson"
	}
	return &importsv1.ImportHeader{TenantId: tenant.String(), Kind: kind, Format: format, ContentType: ct}
}

// upload sends body in chunks of chunk bytes after h.
func (f *fixture) upload(ctx context.Context, h *importsv1.ImportHeader, body string, chunk int) (*importsv1.UploadImportResponse, error) {
	stream, err := f.client.UploadImport(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Header{Header: h}}); err != nil {
		return nil, err
	}
	for len(body) > 0 {
		n := min(chunk, len(body))
		if err := stream.Send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Chunk{Chunk: []byte(body[:n])}}); err != nil {
			break // the server answered already; CloseAndRecv has it
		}
		body = body[n:]
	}
	return stream.CloseAndRecv()
}

func (f *fixture) mustUpload(t *testing.T, h *importsv1.ImportHeader, body string) string {
	t.Helper()
	resp, err := f.upload(as(context.Background(), f.tenant), h, body, 7)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if resp.GetStatus() != "queued" {
		t.Fatalf("upload status %q, want queued", resp.GetStatus())
	}
	return resp.GetId()
}

// runAll runs every claimable import with a runner named owner.
func (f *fixture) runAll(t testing.TB, owner string) {
	t.Helper()
	r := newRunner(f.svc, owner)
	for r.claimAndRun(context.Background()) {
	}
}

func (f *fixture) get(t testing.TB, id string) *importsv1.Import {
	t.Helper()
	resp, err := f.client.GetImport(as(context.Background(), f.tenant), &importsv1.GetImportRequest{TenantId: f.tenant.String(), ImportId: id})
	if err != nil {
		t.Fatalf("get import: %v", err)
	}
	return resp.GetImport()
}

func (f *fixture) errors(t *testing.T, id string) []string {
	t.Helper()
	resp, err := f.client.ListImportErrors(as(context.Background(), f.tenant),
		&importsv1.ListImportErrorsRequest{TenantId: f.tenant.String(), ImportId: id, PageSize: ptr(int32(100))})
	if err != nil {
		t.Fatalf("list errors: %v", err)
	}
	var out []string
	for _, e := range resp.GetItems() {
		out = append(out, fmt.Sprintf("%d %s: %s", e.GetRow(), e.GetColumn(), e.GetMessage()))
	}
	return out
}

func (f *fixture) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := f.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func code(err error) codes.Code { return status.Code(err) }

// fakeServices stands in for the contacts and orders services' import
// RPCs: idempotent by (import, row) as theirs are, counting what each row
// did the first time, and what the calls asserted.
type fakeServices struct {
	mu sync.Mutex
	// written maps import/row to the outcome of its first call.
	written map[string]string
	// sends counts every row received, repeats included.
	sends int
	// calls counts ImportContacts and ImportGifts calls.
	calls int
	// unavailable answers that many calls Unavailable first.
	unavailable int
	// refuse answers every call InvalidArgument.
	refuse bool
	// onCall runs before a call is answered, with the call's number.
	onCall func(n int)
	// dryRows counts rows of dry-run calls (never written).
	dryRows int
	// lean keeps no record of rows (benchmarks of a million rows).
	lean bool
}

func newFakeServices() *fakeServices { return &fakeServices{written: map[string]string{}} }

func (f *fakeServices) check(ctx context.Context, tenant string) error {
	p, ok := authctx.FromIncoming(ctx)
	if !ok || p.TenantID != tenant || !p.HasScope(scopes.ImportsManage) || !strings.HasPrefix(p.Actor(), "import:") {
		return status.Error(codes.PermissionDenied, "bad principal")
	}
	return nil
}

// begin counts a call; false with an error for a call answered Unavailable.
func (f *fakeServices) begin() error {
	f.mu.Lock()
	f.calls++
	n, hook := f.calls, f.onCall
	if f.refuse {
		f.mu.Unlock()
		return status.Error(codes.InvalidArgument, "batch too large")
	}
	if f.unavailable > 0 {
		f.unavailable--
		f.mu.Unlock()
		return status.Error(codes.Unavailable, "down")
	}
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return nil
}

// outcome records row's outcome the first time and answers the recorded
// one after; a dry run records nothing.
func (f *fakeServices) outcome(importID string, row int64, dry bool, decide func() string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends++
	if f.lean {
		return decide()
	}
	if dry {
		f.dryRows++
		return decide()
	}
	k := fmt.Sprintf("%s/%d", importID, row)
	if o, ok := f.written[k]; ok {
		return o
	}
	o := decide()
	f.written[k] = o
	return o
}

func (f *fakeServices) writtenCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.written)
}

type fakeContacts struct {
	contactsv1.UnimplementedContactImportServiceServer
	f *fakeServices
}

// ImportContacts answers a row with lastName Duplicate as skipped, one
// with lastName Refused as failed (under email), the others created.
func (s *fakeContacts) ImportContacts(ctx context.Context, req *contactsv1.ImportContactsRequest) (*contactsv1.ImportContactsResponse, error) {
	if err := s.f.check(ctx, req.GetTenantId()); err != nil {
		return nil, err
	}
	if err := s.f.begin(); err != nil {
		return nil, err
	}
	out := &contactsv1.ImportContactsResponse{}
	for _, r := range req.GetRows() {
		o := s.f.outcome(req.GetImportId(), r.GetRow(), req.GetDryRun(), func() string {
			switch r.GetLastName() {
			case "Duplicate":
				if req.GetDuplicates() == "update" {
					return "updated"
				}
				return "skipped"
			case "Refused":
				return "failed"
			}
			return "created"
		})
		res := &contactsv1.ImportRowResult{Row: r.GetRow(), Outcome: o}
		if o == "failed" {
			res.Column, res.Message = "email", "The contacts service refused it."
		}
		out.Results = append(out.Results, res)
	}
	return out, ctx.Err()
}

// ResolveContacts knows contacts 1 to 99, and external ids C1 to C99 as
// contacts 1001 to 1099.
func (s *fakeContacts) ResolveContacts(ctx context.Context, req *contactsv1.ResolveContactsRequest) (*contactsv1.ResolveContactsResponse, error) {
	if err := s.f.check(ctx, req.GetTenantId()); err != nil {
		return nil, err
	}
	out := &contactsv1.ResolveContactsResponse{ByContactId: map[int64]int64{}, ByExternalId: map[string]int64{}}
	for _, id := range req.GetContactIds() {
		if id < 100 {
			out.ByContactId[id] = id
		}
	}
	for _, e := range req.GetExternalIds() {
		var n int64
		if _, err := fmt.Sscanf(e, "C%d", &n); err == nil && n > 0 && n < 100 {
			out.ByExternalId[e] = 1000 + n
		}
	}
	return out, nil
}

type fakeGifts struct {
	ordersv1.UnimplementedGiftImportServiceServer
	f *fakeServices
	// got keeps the rows received, for the tests to look at.
	mu  sync.Mutex
	got []*ordersv1.GiftImportRow
}

// ImportGifts answers a gift whose external id is already seen skipped,
// a gift to fund Unknown failed (under fund), the others created.
func (s *fakeGifts) ImportGifts(ctx context.Context, req *ordersv1.ImportGiftsRequest) (*ordersv1.ImportGiftsResponse, error) {
	if err := s.f.check(ctx, req.GetTenantId()); err != nil {
		return nil, err
	}
	if err := s.f.begin(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.got = append(s.got, req.GetRows()...)
	s.mu.Unlock()
	out := &ordersv1.ImportGiftsResponse{}
	for _, r := range req.GetRows() {
		o := s.f.outcome(req.GetImportId(), r.GetRow(), req.GetDryRun(), func() string {
			if r.GetFund() == "Unknown" {
				return "failed"
			}
			return "created"
		})
		res := &ordersv1.GiftImportResult{Row: r.GetRow(), Outcome: o}
		if o == "failed" {
			res.Column, res.Message = "fund", "No fund has this name."
		}
		out.Results = append(out.Results, res)
	}
	return out, nil
}

// waitFor polls cond until it holds or the time runs out.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
