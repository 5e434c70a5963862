package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// grpcConn dials a service's gRPC port directly, as anything that reaches
// the internal network could; opts add signing.
func grpcConn(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestInternalPortRefusesUnsignedCalls calls the services' gRPC ports
// directly, without the gateway, as a client on the internal network
// could. Whatever principal it claims (the metadata the gateway used to
// send, an assertion signed with another key, a stale one, one signed for
// another method), listing a tenant's contacts, minting a key with
// orders:void and creating a tenant are Unauthenticated, and nothing is
// written; the same calls signed with the deployment's key work, and
// health checks stay open.
func TestInternalPortRefusesUnsignedCalls(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Ada", "lastName": "Lovelace"})

	const (
		listContacts = "/almoner.contacts.v1.ContactService/ListContacts"
		createKey    = "/almoner.auth.v1.ApiKeyService/CreateApiKey"
		createTenant = "/almoner.auth.v1.TenantAdminService/CreateTenant"
	)
	// The principal of the tenant's own all-scope key, as the gateway
	// would assert it (the auth service reads the creator's row by its id).
	var own []map[string]any
	c.Do(t, "GET", "/api/tenants/"+tn.ID+"/api-keys", tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &own)
	if len(own) != 1 {
		t.Fatalf("keys: %v", own)
	}
	p := authctx.Principal{TenantID: tn.ID, KeyID: own[0]["id"].(string), KeyPrefix: own[0]["keyPrefix"].(string), Scopes: scopes.All(),
		Features: []string{"api-access:enabled"}}
	oldStyle := metadata.Pairs("x-almoner-tenant-id", p.TenantID, "x-almoner-key-id", p.KeyID, "x-almoner-key-prefix", p.KeyPrefix,
		"x-almoner-scopes", strings.Join(p.Scopes, ","), "x-almoner-features", "api-access:enabled")
	other, err := authctx.ParseKey(authctx.NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	assertion := func(k *authctx.Key, method string, expires time.Time) metadata.MD {
		a, err := k.Sign(p, method, expires)
		if err != nil {
			t.Fatal(err)
		}
		return metadata.Pairs(authctx.MetadataKey, a)
	}
	soon := time.Now().Add(time.Minute)
	forgeries := map[string]func(method string) metadata.MD{
		"no metadata":                    func(string) metadata.MD { return metadata.MD{} },
		"the principal headers unsigned": func(string) metadata.MD { return oldStyle },
		"signed with another key":        func(m string) metadata.MD { return assertion(other, m, soon) },
		"stale":                          func(m string) metadata.MD { return assertion(c.InternalKey, m, time.Now().Add(-time.Second)) },
		"signed for another method": func(string) metadata.MD {
			return assertion(c.InternalKey, "/almoner.auth.v1.ApiKeyService/ListApiKeys", soon)
		},
	}
	contacts := contactsv1.NewContactServiceClient(grpcConn(t, c.ServiceAddr("contacts")))
	keys := authv1.NewApiKeyServiceClient(grpcConn(t, c.ServiceAddr("auth")))
	admin := authv1.NewTenantAdminServiceClient(grpcConn(t, c.ServiceAddr("auth")))
	slug := "forged-" + strings.ToLower(uuid.NewString()[:8])
	for name, md := range forgeries {
		ctx := func(method string) context.Context {
			return metadata.NewOutgoingContext(context.Background(), md(method))
		}
		if r, err := contacts.ListContacts(ctx(listContacts), &contactsv1.ListContactsRequest{TenantId: tn.ID}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: ListContacts = %v, %v; want Unauthenticated", name, r, err)
		}
		if r, err := keys.CreateApiKey(ctx(createKey), &authv1.CreateApiKeyRequest{TenantId: tn.ID, Name: "forged", Scopes: []string{scopes.OrdersVoid}}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: CreateApiKey = %v, %v; want Unauthenticated", name, r, err)
		}
		if r, err := admin.CreateTenant(ctx(createTenant), &authv1.CreateTenantRequest{Name: "Forged", Slug: slug}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: CreateTenant = %v, %v; want Unauthenticated", name, r, err)
		}
	}
	if list := c.Do(t, "GET", "/api/tenants/"+tn.ID+"/api-keys", tn.Key, nil).Expect(t, http.StatusOK); strings.Contains(string(list.Body), "forged") {
		t.Errorf("a refused call created a key: %s", list.Body)
	}
	for _, reason := range []string{"no assertion", "signature does not verify", "assertion expired", "assertion signed for another method"} {
		if !strings.Contains(c.Logs.String(), reason) {
			t.Errorf("no log line says %q", reason)
		}
	}
	// Health checks carry no assertion.
	if _, err := healthpb.NewHealthClient(grpcConn(t, c.ServiceAddr("contacts"))).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("unsigned health check: %v", err)
	}

	// Signed with the deployment's key, as its processes sign, each works.
	signed := func(addr string) *grpc.ClientConn { return grpcConn(t, addr, c.InternalKey.DialOptions()...) }
	as := authctx.NewOutgoingContext(context.Background(), p)
	list, err := contactsv1.NewContactServiceClient(signed(c.ServiceAddr("contacts"))).ListContacts(as, &contactsv1.ListContactsRequest{TenantId: tn.ID})
	if err != nil || len(list.GetItems()) != 1 {
		t.Errorf("signed ListContacts = %v, %v; want the tenant's one contact", list, err)
	}
	key, err := authv1.NewApiKeyServiceClient(signed(c.ServiceAddr("auth"))).CreateApiKey(as, &authv1.CreateApiKeyRequest{TenantId: tn.ID, Name: "signed", Scopes: []string{scopes.OrdersVoid}})
	if err != nil || key.GetApiKey().GetPlainTextKey() == "" {
		t.Errorf("signed CreateApiKey = %v, %v", key, err)
	} else {
		apptest.RegisterSecret(key.GetApiKey().GetPlainTextKey())
	}
	// An admin call asserts no tenant: the service assertion of its caller.
	if _, err := authv1.NewTenantAdminServiceClient(signed(c.ServiceAddr("auth"))).CreateTenant(context.Background(), &authv1.CreateTenantRequest{Name: "Signed", Slug: slug}); err != nil {
		t.Errorf("signed CreateTenant (the slug the refused calls named): %v", err)
	}
	// A service assertion is no tenant's principal.
	if _, err := contactsv1.NewContactServiceClient(signed(c.ServiceAddr("contacts"))).ListContacts(context.Background(), &contactsv1.ListContactsRequest{TenantId: tn.ID}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("ListContacts with a service assertion: %v, want Unauthenticated", err)
	}
}

// TestClustersWithOtherKeysRefuseEachOther: two deployments in one
// process, each with its own internal key (nothing is kept per process):
// the admin client of one is refused by the other, and each gateway
// works in front of its own services.
func TestClustersWithOtherKeysRefuseEachOther(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	b := apptest.Start(t, apptest.Options{})
	ta, tb := a.NewTenant(t), b.NewTenant(t)
	a.Do(t, "GET", "/api/tenants/"+ta.ID+"/api-keys", ta.Key, nil).Expect(t, http.StatusOK)
	b.Do(t, "GET", "/api/tenants/"+tb.ID+"/api-keys", tb.Key, nil).Expect(t, http.StatusOK)
	crossed := authv1.NewTenantAdminServiceClient(grpcConn(t, b.ServiceAddr("auth"), a.InternalKey.DialOptions()...))
	if _, err := crossed.GetTenant(context.Background(), &authv1.GetTenantRequest{TenantId: tb.ID}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a's admin at b's auth service: %v, want Unauthenticated", err)
	}
}
