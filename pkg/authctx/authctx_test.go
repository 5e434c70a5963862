package authctx

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/config"
)

const method = "/almoner.contacts.v1.ContactService/ListContacts"

func testKey(t testing.TB) *Key {
	t.Helper()
	k, err := ParseKey(NewKeyHex())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSystemPrincipal(t *testing.T) {
	p := System("t1", "processor:stripe", "orders:void")
	if p.Actor() != "processor:stripe" || !p.HasScope("orders:void") || p.HasScope("orders:create") {
		t.Errorf("system principal = %+v, actor %s", p, p.Actor())
	}
	k := testKey(t)
	a, err := k.Sign(p, method, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(a, method, time.Now())
	if err != nil || got.Actor() != "processor:stripe" || got.TenantID != "t1" {
		t.Errorf("through an assertion: %+v %v", got, err)
	}
	if k := (Principal{KeyID: "k", KeyPrefix: "ak_test_abc"}); k.Actor() != "api-key:ak_test_abc" {
		t.Errorf("key actor = %s", k.Actor())
	}
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	now := time.Now()
	for _, p := range []Principal{
		{TenantID: "7b0e4c1e-3f7a-4d0e-9a51-1f1e2d3c4b5a", KeyID: "0190a4d6-0000-7000-8000-0000000000aa", KeyPrefix: "ak_test_abcdefghijkl",
			Scopes: []string{"contacts:view", "orders:void"}, Features: []string{"api-access:enabled", "webhooks:enabled"}, Currency: "EUR"},
		{TenantID: "t", KeyID: "k", KeyPrefix: "p"},
		// A staff session on a tenant route, and on /api/auth.
		{TenantID: "t", UserID: "u", SessionID: "s", Scopes: []string{"contacts:view"}, Currency: "USD"},
		{UserID: "u", SessionID: "s"},
		{}, // a service assertion
	} {
		a, err := k.Sign(p, method, now.Add(Lifetime))
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Verify(a, method, now)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if got.TenantID != p.TenantID || got.KeyID != p.KeyID || got.KeyPrefix != p.KeyPrefix || got.Currency != p.Currency ||
			got.UserID != p.UserID || got.SessionID != p.SessionID ||
			strings.Join(got.Scopes, ",") != strings.Join(p.Scopes, ",") || strings.Join(got.Features, ",") != strings.Join(p.Features, ",") {
			t.Errorf("got %+v, want %+v", got, p)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	k, other := testKey(t), testKey(t)
	now := time.Now()
	p := Principal{TenantID: "tenant-a", KeyID: "k1", KeyPrefix: "ak_test_x", Scopes: []string{"contacts:view"}, Currency: "USD"}
	good, err := k.Sign(p, method, now.Add(Lifetime))
	if err != nil {
		t.Fatal(err)
	}
	byOther, _ := other.Sign(p, method, now.Add(Lifetime))
	stale, _ := k.Sign(p, method, now.Add(-time.Millisecond))
	atExpiry, _ := k.Sign(p, method, now)
	// Another tenant in the same bytes, the MAC left as it was.
	retargeted := strings.Replace(good, "tenant-a", "tenant-b", 1)
	// More scopes, likewise.
	widened := strings.Replace(good, "contacts:view", "orders:voidxx", 1)
	// Another currency, likewise: money recorded in the wrong one.
	recurrenced := strings.Replace(good, "\nUSD\n", "\nEUR\n", 1)
	flipped := good[:len(good)-1] + string(good[len(good)-1]^1)
	for name, tc := range map[string]struct {
		assertion, method string
		want              error
	}{
		"signed with another key": {byOther, method, errForged},
		"tenant changed":          {retargeted, method, errForged},
		"scopes changed":          {widened, method, errForged},
		"currency changed":        {recurrenced, method, errForged},
		"MAC changed":             {flipped, method, errForged},
		"cut short":               {good[:20], method, errMalformed},
		"empty":                   {"", method, errMalformed},
		"expired":                 {stale, method, errExpired},
		"at its expiry":           {atExpiry, method, errExpired},
		"another method":          {good, "/almoner.auth.v1.TenantAdminService/CreateTenant", errMethod},
	} {
		if _, err := k.Verify(tc.assertion, tc.method, now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := k.Verify(good, method, now); err != nil {
		t.Errorf("the untouched assertion: %v", err)
	}
}

// TestAssertionReuse: within Reuse of signing, a process sends the same
// assertion for the same principal and method; anything else, or later,
// is signed afresh, and what is sent always verifies for its method and
// expires Lifetime after it was signed.
func TestAssertionReuse(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	now := time.Now()
	k.now = func() time.Time { return now }
	p := Principal{TenantID: "7b0e4c1e-3f7a-4d0e-9a51-1f1e2d3c4b5a", KeyID: "k1", KeyPrefix: "ak_test_x", Scopes: []string{"contacts:view"}, Currency: "USD"}
	first, err := k.assert(p, method)
	if err != nil {
		t.Fatal(err)
	}
	signedAt := now
	now = now.Add(Reuse - time.Millisecond)
	if again, _ := k.assert(p, method); again != first {
		t.Error("signed afresh within Reuse")
	}
	wider := p
	wider.Scopes = []string{"contacts:view", "orders:void"}
	for name, a := range map[string]string{
		"another method":    must(k.assert(p, "/almoner.orders.v1.OrderService/VoidOrder")),
		"another principal": must(k.assert(wider, method)),
		"a service":         must(k.assert(Principal{}, method)),
	} {
		if a == first {
			t.Errorf("%s: reused the assertion of another call", name)
		}
	}
	if got, err := k.Verify(first, method, now); err != nil || got.TenantID != p.TenantID {
		t.Errorf("the reused assertion: %+v %v", got, err)
	}
	if _, err := k.Verify(first, method, signedAt.Add(Lifetime)); !errors.Is(err, errExpired) {
		t.Errorf("Lifetime after it was signed: %v, want %v", err, errExpired)
	}
	now = signedAt.Add(Reuse)
	renewed, _ := k.assert(p, method)
	if renewed == first {
		t.Error("reused past Reuse")
	}
	if _, err := k.Verify(renewed, method, signedAt.Add(Lifetime)); err != nil {
		t.Errorf("the renewed assertion: %v", err)
	}
	// A clock set back signs afresh rather than sending an assertion from
	// its future.
	now = signedAt.Add(-time.Second)
	if back, _ := k.assert(p, method); back == renewed || back == first {
		t.Error("reused an assertion signed after now")
	}
	if _, err := k.assert(Principal{TenantID: "t\nk"}, method); err == nil {
		t.Error("a field that would shift the others was asserted")
	}
	// The same lists, changed in place within Reuse: what is sent says
	// what they say now.
	now = now.Add(time.Millisecond)
	kept := must(k.assert(wider, method))
	if again := must(k.assert(wider, method)); again != kept {
		t.Error("the same principal signed afresh within Reuse")
	}
	wider.Scopes[1] = "orders:refund"
	changed := must(k.assert(wider, method))
	if changed == kept {
		t.Fatal("reused the assertion of scopes changed in place")
	}
	if got, err := k.Verify(changed, method, now); err != nil || !slices.Equal(got.Scopes, []string{"contacts:view", "orders:refund"}) {
		t.Errorf("scopes changed in place: asserted %v (%v)", got.Scopes, err)
	}
	// A copy of the lists, elsewhere in memory, finds nothing kept but
	// asserts the same.
	copied := wider
	copied.Scopes = slices.Clone(wider.Scopes)
	if got, err := k.Verify(must(k.assert(copied, method)), method, now); err != nil || !slices.Equal(got.Scopes, copied.Scopes) {
		t.Errorf("copied scopes: asserted %v (%v)", got.Scopes, err)
	}
}

func must(a string, err error) string {
	if err != nil {
		panic(err)
	}
	return a
}

// TestVerifiedAssertionsStillExpire: an assertion verified once is kept,
// but every later call still checks its expiry and method, and changed
// bytes are checked from scratch.
func TestVerifiedAssertionsStillExpire(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	now := time.Now()
	p := Principal{TenantID: "tenant-a", KeyID: "k1", KeyPrefix: "ak_test_x", Scopes: []string{"contacts:view"}}
	good, _ := k.Sign(p, method, now.Add(Lifetime))
	if _, err := k.Verify(good, method, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.verified[good]; !ok {
		t.Fatal("a verified assertion was not kept")
	}
	for name, tc := range map[string]struct {
		method string
		at     time.Time
		want   error
	}{
		"at its expiry":  {method, now.Add(Lifetime), errExpired},
		"after it":       {method, now.Add(time.Hour), errExpired},
		"another method": {"/almoner.auth.v1.TenantAdminService/CreateTenant", now, errMethod},
	} {
		if _, err := k.Verify(good, tc.method, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := k.Verify(strings.Replace(good, "tenant-a", "tenant-b", 1), method, now); !errors.Is(err, errForged) {
		t.Errorf("changed bytes after the original was kept: %v", err)
	}
	got, err := k.Verify(good, method, now)
	if err != nil {
		t.Fatal(err)
	}
	// A handler that appends to its principal's scopes does not change
	// the kept one.
	_ = append(got.Scopes, "orders:void")
	if again, _ := k.Verify(good, method, now); strings.Join(again.Scopes, ",") != "contacts:view" {
		t.Errorf("kept scopes changed: %v", again.Scopes)
	}
	// An assertion already expired is refused and not kept.
	stale, _ := k.Sign(p, method, now)
	if _, err := k.Verify(stale, method, now); !errors.Is(err, errExpired) {
		t.Errorf("stale: %v", err)
	}
	if _, ok := k.verified[stale]; ok {
		t.Error("an expired assertion was kept")
	}
}

// TestKeptAssertionsAreBounded: past maxVerified and maxSigned, the caches
// drop what they hold instead of growing.
func TestKeptAssertionsAreBounded(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	now := time.Now()
	k.now = func() time.Time { return now }
	for i := range maxVerified + 10 {
		p := Principal{TenantID: "t", KeyID: strconv.Itoa(i)}
		a, err := k.assert(p, method)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Verify(a, method, now); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.verified) > maxVerified || len(k.signed) > maxSigned {
		t.Errorf("kept %d verified (at most %d) and %d signed (at most %d)", len(k.verified), maxVerified, len(k.signed), maxSigned)
	}
}

func TestSignRefusesFieldsThatWouldShift(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	for _, p := range []Principal{
		{TenantID: "t\nk", KeyID: "k"},
		{TenantID: "t", KeyID: "k", Currency: "US\nD"},
		{TenantID: "t", KeyID: "k", Scopes: []string{"a,b"}},
		{TenantID: "t", KeyID: "k", Features: []string{""}},
	} {
		if _, err := k.Sign(p, method, time.Now().Add(time.Minute)); err == nil {
			t.Errorf("%+v signed", p)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	if _, err := ParseKey(strings.Repeat("ab", 31)); err == nil {
		t.Error("a 31-byte key was accepted")
	}
	if _, err := ParseKey(strings.Repeat("zz", 32)); err == nil {
		t.Error("a key that is not hex was accepted")
	}
	if _, err := ParseKey(strings.Repeat("ab", 32) + "\n"); err != nil {
		t.Errorf("a key file's line: %v", err)
	}
	if _, err := KeyFromConfig(config.Overlay(map[string]string{KeyVar: ""}, func(string) string { return "" })); !errors.Is(err, ErrNoKey) {
		t.Errorf("unset: %v", err)
	}
	if !strings.Contains(ErrNoKey.Error(), "openssl rand -hex 32") {
		t.Error("the message does not say how to make a key")
	}
}

func TestFromIncomingReadsOnlyVerified(t *testing.T) {
	t.Parallel()
	// Raw metadata as the gateway once sent it carries nothing now.
	md := metadata.Pairs("x-almoner-tenant-id", "t1", "x-almoner-key-id", "k", "x-almoner-scopes", "contacts:view")
	ctx := metadata.NewIncomingContext(context.Background(), md)
	if p, ok := FromIncoming(ctx); ok {
		t.Errorf("raw metadata read as a principal: %+v", p)
	}
	if _, err := Require(ctx, "t1", "contacts:view"); !apperr.IsKind(err, apperr.KindUnauthenticated) {
		t.Errorf("Require on raw metadata: %v", err)
	}
	// A service assertion is verified but names no tenant.
	if _, ok := FromIncoming(NewIncomingContext(context.Background(), Principal{})); ok {
		t.Error("a service assertion read as a principal")
	}
	p := Principal{TenantID: "t1", KeyID: "k", Scopes: []string{"contacts:view"}}
	if _, err := Require(NewIncomingContext(context.Background(), p), "t1", "contacts:view"); err != nil {
		t.Errorf("verified principal: %v", err)
	}
}

func TestDefaultCurrency(t *testing.T) {
	t.Parallel()
	if c, err := (Principal{TenantID: "t", KeyID: "k", Currency: "EUR"}).DefaultCurrency(); c != "EUR" || err != nil {
		t.Errorf("EUR principal: %q %v", c, err)
	}
	if c, err := System("t", "processor:stripe").DefaultCurrency(); c != "" || !apperr.IsKind(err, apperr.KindUnavailable) {
		t.Errorf("a principal without a currency: %q %v; want a 503", c, err)
	}
}

// BenchmarkSignVerify is what one internal call costs for its assertion:
// the caller signs (or reuses what it signed less than Reuse ago), the
// server verifies (or finds the same bytes verified); a gateway key's full
// principal.
func BenchmarkSignVerify(b *testing.B) {
	k := testKey(b)
	p := Principal{TenantID: "7b0e4c1e-3f7a-4d0e-9a51-1f1e2d3c4b5a", KeyID: "0190a4d6-0000-7000-8000-0000000000aa",
		KeyPrefix: "ak_test_abcdefghijkl", Currency: "USD", Features: []string{"api-access:enabled", "payment-processor:enabled", "webhooks:enabled"},
		Scopes: strings.Split("api-keys:manage,audit-logs:view,batches:manage,contacts:create,contacts:delete,contacts:update,contacts:view,donations:view,funds:manage,inventory:manage,inventory:view,orders:create,orders:refund,orders:view,orders:void,recurring:manage,recurring:view,reports:run,reports:manage,webhooks:manage", ",")}
	b.Run("sign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Sign(p, method, time.Now().Add(Lifetime)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reuse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.assert(p, method); err != nil {
				b.Fatal(err)
			}
		}
	})
	a, _ := k.Sign(p, method, time.Now().Add(time.Hour))
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.verifyMAC(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verified", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Verify(a, method, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSessionPrincipal: a session's principal acts as user:<id> on its
// tenant, and only a session's principal is one on /api/auth.
func TestSessionPrincipal(t *testing.T) {
	p := Principal{TenantID: "t", UserID: "u1", SessionID: "s1", Scopes: []string{"contacts:view"}}
	if p.Actor() != "user:u1" {
		t.Errorf("actor %q", p.Actor())
	}
	ctx := NewIncomingContext(context.Background(), p)
	if got, err := Require(ctx, "t", "contacts:view"); err != nil || got.UserID != "u1" {
		t.Errorf("Require = %+v, %v", got, err)
	}
	if _, ok := FromSession(NewIncomingContext(context.Background(), Principal{TenantID: "t", KeyID: "k"})); ok {
		t.Error("a key's principal is a session")
	}
	if got, ok := FromSession(NewIncomingContext(context.Background(), Principal{UserID: "u1", SessionID: "s1"})); !ok || got.UserID != "u1" {
		t.Error("a session without a tenant is not read")
	}
}

func TestTenantIsTheParsedTenantID(t *testing.T) {
	k := testKey(t)
	const id = "7b0e4c1e-3f7a-4d0e-9a51-1f1e2d3c4b5a"
	want := uuid.MustParse(id)
	a, err := k.Sign(Principal{TenantID: id, KeyID: "k"}, method, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(a, method, time.Now())
	if err != nil || got.Tenant() != want {
		t.Errorf("verified: %v, %v; want %v", got.Tenant(), err, want)
	}
	if p := (Principal{TenantID: id, KeyID: "k"}); p.Tenant() != want {
		t.Errorf("built in process: %v, want %v", p.Tenant(), want)
	}
	if s := System(id, "system"); s.Tenant() != want {
		t.Errorf("system: %v, want %v", s.Tenant(), want)
	}
	if p := (Principal{TenantID: "not-a-uuid", KeyID: "k"}); p.Tenant() != uuid.Nil {
		t.Errorf("not a UUID: %v, want uuid.Nil", p.Tenant())
	}
}
