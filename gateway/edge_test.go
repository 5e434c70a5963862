package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
)

// These tests run requests through the whole gateway (New, ServeHTTP) in
// front of one fake gRPC upstream standing in for every service.

const (
	edgeTenant  = "7b0e4c1e-3f7a-4d0e-9a51-1f1e2d3c4b5a"
	otherTenant = "0d7f3a52-8c1b-4e5f-9a2d-6b4c3e2f1a00"
	goodKey     = "ak_test_good"
	// otherKey is a key of otherTenant.
	otherKey = "ak_test_other"
	keysURL  = "/api/tenants/" + edgeTenant + "/api-keys"
)

// upstream is every service the edge tests call, recording what arrives.
type upstream struct {
	authv1.UnimplementedKeyValidationServiceServer
	authv1.UnimplementedApiKeyServiceServer
	contactsv1.UnimplementedContactFormServiceServer
	ordersv1.UnimplementedProcessorNotificationServiceServer

	mu        sync.Mutex
	calls     int
	lastName  string
	lastEvent []byte
	// principals are what each call's verified assertion said, by method:
	// a principal, or ok false for the gateway's own assertion.
	principals map[string]seenPrincipal
	// imports is the import service (imports_test.go).
	imports *fakeImports
}

type seenPrincipal struct {
	p  authctx.Principal
	ok bool
}

// record notes the principal a call was verified to carry.
func (u *upstream) record(ctx context.Context, method string) {
	p, ok := authctx.FromIncoming(ctx)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.principals == nil {
		u.principals = map[string]seenPrincipal{}
	}
	u.principals[method] = seenPrincipal{p, ok}
}

func (u *upstream) principal(method string) (seenPrincipal, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	sp, ok := u.principals[method]
	return sp, ok
}

func (u *upstream) ValidateKey(ctx context.Context, req *authv1.ValidateKeyRequest) (*authv1.ValidateKeyResponse, error) {
	u.record(ctx, "ValidateKey")
	tenant := edgeTenant
	switch req.GetApiKey() {
	case goodKey:
	case otherKey:
		tenant = otherTenant
	default:
		return nil, status.Error(codes.Unauthenticated, "no")
	}
	return &authv1.ValidateKeyResponse{TenantId: tenant, KeyId: "k1", KeyPrefix: "ak_test_", Scopes: []string{"api-keys:manage"}, DefaultCurrency: "EUR"}, nil
}

// operatorToken is the session cookie the upstream answers as a
// platform-admin operator's on /api/admin routes.
const operatorToken = "operator-session"

func (u *upstream) ValidateSession(_ context.Context, req *authv1.ValidateSessionRequest) (*authv1.ValidateSessionResponse, error) {
	if req.GetToken() != operatorToken || !req.GetAdmin() {
		return nil, status.Error(codes.Unauthenticated, "Unauthorized")
	}
	return &authv1.ValidateSessionResponse{UserId: "u1", SessionId: "s1", PlatformRole: "platform-admin"}, nil
}

func (u *upstream) GetValidationEpoch(context.Context, *authv1.GetValidationEpochRequest) (*authv1.GetValidationEpochResponse, error) {
	return &authv1.GetValidationEpochResponse{Epoch: 1}, nil
}

func (u *upstream) note(name string, event []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	if name != "" {
		u.lastName = name
	}
	if event != nil {
		u.lastEvent = event
	}
}

func (u *upstream) seen() (int, string, []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls, u.lastName, u.lastEvent
}

func (u *upstream) ListApiKeys(ctx context.Context, _ *authv1.ListApiKeysRequest) (*authv1.ListApiKeysResponse, error) {
	u.record(ctx, "ListApiKeys")
	u.note("", nil)
	return &authv1.ListApiKeysResponse{}, nil
}

func (u *upstream) CreateApiKey(_ context.Context, req *authv1.CreateApiKeyRequest) (*authv1.CreateApiKeyResponse, error) {
	u.note(req.GetName(), nil)
	return &authv1.CreateApiKeyResponse{}, nil
}

func (u *upstream) CreateContactFormSubmission(ctx context.Context, req *contactsv1.CreateContactFormSubmissionRequest) (*contactsv1.CreateContactFormSubmissionResponse, error) {
	u.record(ctx, "CreateContactFormSubmission")
	u.note(req.GetName(), nil)
	return &contactsv1.CreateContactFormSubmissionResponse{}, nil
}

func (u *upstream) ReceiveStripeEvent(_ context.Context, req *ordersv1.ReceiveStripeEventRequest) (*ordersv1.ReceiveStripeEventResponse, error) {
	u.note("", req.GetPayload())
	return &ordersv1.ReceiveStripeEventResponse{Received: true}, nil
}

// startEdge starts the fake upstream and a gateway routing every service
// to it, configured by cfg (Upstreams, Logger and InternalKey are filled
// in). The upstream verifies every call's assertion, as services do.
func startEdge(t *testing.T, cfg Config) (*Gateway, *upstream) {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{imports: &fakeImports{}}
	key, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(key.UnaryServerInterceptor(discard)),
		grpc.ChainStreamInterceptor(key.StreamServerInterceptor(discard)))
	authv1.RegisterKeyValidationServiceServer(srv, u)
	authv1.RegisterApiKeyServiceServer(srv, u)
	contactsv1.RegisterContactFormServiceServer(srv, u)
	ordersv1.RegisterProcessorNotificationServiceServer(srv, u)
	importsv1.RegisterImportServiceServer(srv, u.imports)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cfg.Upstreams = map[string]string{}
	for _, name := range Services() {
		cfg.Upstreams[name] = lis.Addr().String()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.InternalKey == nil {
		cfg.InternalKey = key
	}
	g, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g, u
}

// watchedBody is a request body that counts the reads made of it and,
// when hold is set, blocks its first read until hold is closed (after
// closing reading, when that is set).
type watchedBody struct {
	r       io.Reader
	reads   atomic.Int64
	hold    chan struct{}
	reading chan struct{}
	once    sync.Once
}

func newWatchedBody(content string) *watchedBody { return &watchedBody{r: strings.NewReader(content)} }

func (b *watchedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	if b.hold != nil {
		b.once.Do(func() {
			if b.reading != nil {
				close(b.reading)
			}
			<-b.hold
		})
	}
	return b.r.Read(p)
}

func (b *watchedBody) Close() error { return nil }

// holdRequest serves r, whose body is body, in the background until the
// gateway's first read of the body, which it holds there; it returns a
// function that lets the read go on and returns the answer's status.
func holdRequest(t *testing.T, g *Gateway, r *http.Request, body *watchedBody) func() int {
	t.Helper()
	body.hold, body.reading = make(chan struct{}), make(chan struct{})
	done := make(chan int, 1)
	go func() { done <- serve(g, r).Code }()
	select {
	case <-body.reading:
	case code := <-done:
		t.Fatalf("held request answered %d before reading its body", code)
	case <-time.After(10 * time.Second):
		t.Fatal("held request never read its body")
	}
	return func() int {
		close(body.hold)
		return <-done
	}
}

// request builds a request with body as its body and contentLength as its
// declared length (-1: unknown, as chunked).
func request(method, path, key, contentType string, body io.ReadCloser, contentLength int64) *http.Request {
	r := httptest.NewRequestWithContext(context.Background(), method, path, nil)
	if body != nil {
		r.Body, r.ContentLength = body, contentLength
	}
	if key != "" {
		r.Header.Set("X-Api-Key", key)
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

func serve(g *Gateway, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	return w
}

// errReader fails every read, as a client that went away.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
func (errReader) Close() error             { return nil }

// TestGatewaySignsWhatItAsserts: the upstream, which verifies every call,
// receives a keyed route's call with the key's principal (the tenant's
// default currency included), and key
// validation and a public route with the gateway's own assertion. A
// gateway with another key gets nothing past the upstream: every
// validation is refused, so every keyed request is the one 401.
func TestGatewaySignsWhatItAsserts(t *testing.T) {
	g, u := startEdge(t, Config{})
	if w := serve(g, request(http.MethodGet, keysURL, goodKey, "", nil, 0)); w.Code != http.StatusOK {
		t.Fatalf("keyed GET: %d %s", w.Code, w.Body)
	}
	if sp, ok := u.principal("ListApiKeys"); !ok || !sp.ok || sp.p.TenantID != edgeTenant || sp.p.KeyID != "k1" ||
		!sp.p.HasScope("api-keys:manage") || sp.p.Currency != "EUR" {
		t.Errorf("ListApiKeys saw %+v (called %v)", sp, ok)
	}
	if sp, ok := u.principal("ValidateKey"); !ok || sp.ok {
		t.Errorf("ValidateKey saw %+v (called %v), want the gateway's own assertion", sp, ok)
	}
	form := `{"name":"Ada","email":"ada@example.org","message":"hi"}`
	if w := serve(g, request(http.MethodPost, "/api/contact-form", "", "application/json", io.NopCloser(strings.NewReader(form)), int64(len(form)))); w.Code >= 300 {
		t.Fatalf("contact form: %d %s", w.Code, w.Body)
	}
	if sp, ok := u.principal("CreateContactFormSubmission"); !ok || sp.ok {
		t.Errorf("contact form saw %+v (called %v), want the gateway's own assertion", sp, ok)
	}

	wrong, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	g2, u2 := startEdge(t, Config{InternalKey: wrong})
	if w := serve(g2, request(http.MethodGet, keysURL, goodKey, "", nil, 0)); w.Code != http.StatusUnauthorized {
		t.Errorf("gateway with another key: %d %s, want 401", w.Code, w.Body)
	}
	if calls, _, _ := u2.seen(); calls != 0 {
		t.Errorf("%d calls reached the upstream from a gateway with another key", calls)
	}
}
