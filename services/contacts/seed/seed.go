// Package seed bulk-loads synthetic contacts into one tenant with COPY, for
// benchmarks and load tests: a million contacts, each with an email and an
// address and half of them with a phone, in well under a minute.
//
// It writes the tables directly, like an import would, and therefore no
// audit rows: these contacts were never created through the API.
package seed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/almoner/almoner/services/contacts/store"
)

// PostalCodes is how many distinct postal codes the contacts spread over:
// about 33 contacts per code at a million, like a dense national list.
const PostalCodes = 30_000

// Result says what Seed loaded.
type Result struct {
	Tenant   uuid.UUID
	Contacts int
	// FirstID and LastID bound the contact ids (contiguous).
	FirstID, LastID int64
	Elapsed         time.Duration
}

var (
	firstNames = []string{"James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
		"William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Christopher",
		"Lisa", "Daniel", "Nancy", "Matthew", "Betty", "Anthony", "Margaret", "Mark", "Sandra", "Donald", "Ashley", "Steven",
		"Kimberly", "Paul", "Emily", "Andrew", "Donna", "Joshua", "Michelle", "Kenneth", "Carol", "Kevin", "Amanda", "Brian",
		"Dorothy", "George", "Melissa", "Timothy", "Deborah", "Ronald", "Stephanie", "Edward", "Rebecca", "Jason", "Sharon",
		"Jeffrey", "Laura", "Ryan", "Cynthia", "Jacob", "Kathleen", "Gary", "Amy", "Nicholas", "Angela", "Eric", "Shirley",
		"Jonathan", "Anna", "Stephen", "Brenda", "Larry", "Pamela", "Justin", "Emma", "Scott", "Nicole", "Brandon", "Helen"}
	lastNames = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
		"Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee",
		"Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young",
		"Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker",
		"Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Gomez", "Phillips", "Evans", "Turner", "Diaz",
		"Parker", "Cruz", "Edwards", "Collins", "Reyes", "Stewart", "Morris", "Morales", "Murphy", "Cook", "Rogers",
		"Gutierrez", "Ortiz", "Morgan", "Cooper", "Peterson", "Bailey", "Reed", "Kelly", "Howard", "Ramos", "Kim", "Cox",
		"Ward", "Richardson", "Watson", "Brooks", "Chavez", "Wood", "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes",
		"Price", "Alvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez"}
	orgWords = []string{"Acme", "Summit", "Harbor", "Beacon", "Cedar", "Pioneer", "Unity", "Riverside", "Keystone", "Lighthouse"}
	orgKinds = []string{"Foundation", "Trust", "Industries", "Partners", "Church", "Association", "Fund", "Group"}
	streets  = []string{"Main St", "Oak Ave", "Maple Dr", "Cedar Ln", "Elm St", "Pine Rd", "Park Ave", "Lake Blvd"}
	cities   = []string{"Springfield", "Riverton", "Fairview", "Madison", "Georgetown", "Salem", "Franklin", "Clinton"}
	states   = []string{"CA", "TX", "NY", "FL", "IL", "PA", "OH", "GA", "NC", "MI"}
)

// Contact returns the fields of synthetic contact i, the same on every run.
func Contact(i int) store.Fields {
	h := mix(uint64(i))
	f := names(h)
	f.IsActive = i%50 != 0
	f.Emails = []store.Email{email(i, f)}
	if i%2 == 0 {
		f.Phones = []store.Phone{phone(i, h)}
	}
	f.Addresses = []store.Address{address(h)}
	switch {
	case h%20 == 1:
		f.Tags = []string{"major-donor"}
	case h%5 == 2:
		f.Tags = []string{"donor"}
	default:
		f.Tags = []string{}
	}
	return f
}

// names makes one contact in ten an organization.
func names(h uint64) store.Fields {
	if h%10 == 0 {
		return store.Fields{Type: store.Organization, OrganizationName: orgWords[(h>>8)%uint64(len(orgWords))] + " " +
			lastNames[(h>>16)%uint64(len(lastNames))] + " " + orgKinds[(h>>24)%uint64(len(orgKinds))]}
	}
	return store.Fields{Type: store.Individual, FirstName: firstNames[(h>>8)%uint64(len(firstNames))], LastName: lastNames[(h>>16)%uint64(len(lastNames))]}
}

// email is unique per contact: the index is part of the address.
func email(i int, f store.Fields) store.Email {
	local := "contact" + strconv.Itoa(i)
	if f.Type == store.Individual {
		local = lower(f.FirstName) + "." + lower(f.LastName) + "." + strconv.Itoa(i)
	}
	addr := local + "@example.org"
	return store.Email{Address: addr, Key: addr, Type: "Personal", IsPrimary: true}
}

// phone is a ten-digit number, unique per contact below 10^7 contacts.
func phone(i int, h uint64) store.Phone {
	area := strconv.Itoa(int(200 + (h>>32)%800))
	line := strconv.Itoa(10_000_000 + i%10_000_000)[1:]
	digits := area + line
	return store.Phone{Number: "+1 (" + area + ") " + line[:3] + "-" + line[3:], Key: digits, Type: "Mobile", IsPrimary: true}
}

func address(h uint64) store.Address {
	postal := strconv.Itoa(int(10000 + (h>>40)%PostalCodes))
	return store.Address{
		Type: "Home", IsPrimary: true, Line1: strconv.Itoa(1+int(h>>20)%9000) + " " + streets[(h>>12)%uint64(len(streets))],
		City: cities[(h>>28)%uint64(len(cities))], StateProvince: states[(h>>36)%uint64(len(states))],
		PostalCode: postal, PostalKey: postal, Country: "US",
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// mix is SplitMix64: a cheap, well-spread hash of i.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Seed loads n synthetic contacts (Contact(0) … Contact(n-1)) into tenant.
//
// The four tables load concurrently, each with one COPY on its own
// connection. Foreign-key checks, a per-row lookup that would double the
// load time, are skipped where the role may do so (session_replication_role
// needs a superuser): the rows are generated consistent, contacts and their
// rows from the same reserved id ranges. Without that permission the
// contacts load first and the checks run.
func Seed(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, n int) (Result, error) {
	if n <= 0 {
		return Result{}, errors.New("seed: n must be positive")
	}
	start := time.Now()
	ids, err := reserve(ctx, pool, tenant, n)
	if err != nil {
		return Result{}, err
	}
	// pgtype.UUID encodes straight to binary; uuid.UUID would go through
	// its driver.Valuer text form on every row.
	l := loader{pool: pool, tenant: pgtype.UUID{Bytes: tenant, Valid: true}, n: n, ids: ids, now: time.Now().UTC()}
	if err := l.load(ctx); err != nil {
		return Result{}, err
	}
	if err := vacuum(ctx, pool); err != nil {
		return Result{}, err
	}
	return Result{Tenant: tenant, Contacts: n, FirstID: ids.contact, LastID: ids.contact + int64(n) - 1, Elapsed: time.Since(start)}, nil
}

// idRanges are the first ids of the ranges reserved for one load.
type idRanges struct{ contact, email, phone, address int64 }

// phoneCount is how many of n contacts have a phone: the even ones.
func phoneCount(n int) int { return (n + 1) / 2 }

// reserve takes the id ranges of n contacts and their rows from tenant's
// counters.
func reserve(ctx context.Context, pool *pgxpool.Pool, tenant uuid.UUID, n int) (idRanges, error) {
	// Each kind of id comes in one consecutive range of the tenant's
	// counter, taken with one statement (pkg/counter's bulk Take), so
	// API writes of the same tenant meanwhile never take an id inside it.
	ids := store.New(pool).IDs()
	var r idRanges
	for _, k := range []struct {
		into *int64
		name string
		n    int
	}{{&r.contact, store.CounterContact, n}, {&r.email, store.CounterEmail, n}, {&r.phone, store.CounterPhone, phoneCount(n)}, {&r.address, store.CounterAddress, n}} {
		var err error
		if *k.into, err = ids.Take(ctx, tenant, k.name, int64(k.n)); err != nil {
			return idRanges{}, fmt.Errorf("seed: reserve %s ids: %w", k.name, err)
		}
	}
	return r, nil
}

// loader copies one load's rows into the four tables.
type loader struct {
	pool   *pgxpool.Pool
	tenant pgtype.UUID
	n      int
	ids    idRanges
	now    time.Time
}

// load copies the four tables at once when the foreign-key checks can be
// skipped, and the contacts before their rows otherwise.
func (l loader) load(ctx context.Context) error {
	skip, err := canSkipChecks(ctx, l.pool)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if skip {
		g.Go(func() error { return l.contacts(gctx, true) })
	} else if err := l.contacts(ctx, false); err != nil {
		return err
	}
	for _, load := range []func(ctx context.Context, skipChecks bool) error{l.emails, l.phones, l.addresses} {
		g.Go(func() error { return load(gctx, skip) })
	}
	return g.Wait()
}

// contacts copies the contacts themselves.
func (l loader) contacts(ctx context.Context, skipChecks bool) error {
	return copyRows(ctx, l.pool, skipChecks, "contacts", []string{"tenant_id", "id", "contact_type", "first_name", "last_name", "organization_name",
		"tags", "tag_keys", "is_active", "name_key", "search_text", "created_at", "updated_at"}, l.n, func(i int) []any {
		f := Contact(i)
		return []any{l.tenant, l.ids.contact + int64(i), f.Type, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName),
			f.Tags, f.Tags, f.IsActive, store.NameKey(f), store.SearchText(f), l.now, l.now}
	})
}

// emails copies every contact's email.
func (l loader) emails(ctx context.Context, skipChecks bool) error {
	return copyRows(ctx, l.pool, skipChecks, "contact_emails", []string{"tenant_id", "id", "contact_id", "position", "email_address", "email_key", "email_type", "is_primary"}, l.n, func(i int) []any {
		e := email(i, names(mix(uint64(i))))
		return []any{l.tenant, l.ids.email + int64(i), l.ids.contact + int64(i), int16(0), e.Address, e.Key, e.Type, true}
	})
}

// phones copies the phones of the even contacts.
func (l loader) phones(ctx context.Context, skipChecks bool) error {
	return copyRows(ctx, l.pool, skipChecks, "contact_phones", []string{"tenant_id", "id", "contact_id", "position", "phone_number", "phone_key", "phone_type", "is_primary"}, phoneCount(l.n), func(j int) []any {
		i := 2 * j
		p := phone(i, mix(uint64(i)))
		return []any{l.tenant, l.ids.phone + int64(j), l.ids.contact + int64(i), int16(0), p.Number, p.Key, p.Type, true}
	})
}

// addresses copies every contact's address.
func (l loader) addresses(ctx context.Context, skipChecks bool) error {
	return copyRows(ctx, l.pool, skipChecks, "contact_addresses", []string{"tenant_id", "id", "contact_id", "position", "address_type", "is_primary",
		"line1", "city", "state_province", "postal_code", "postal_key", "country", "name_key"}, l.n, func(i int) []any {
		h := mix(uint64(i))
		a := address(h)
		return []any{l.tenant, l.ids.address + int64(i), l.ids.contact + int64(i), int16(0), a.Type, true, a.Line1, a.City, a.StateProvince, a.PostalCode, a.PostalKey, a.Country,
			store.NameKey(names(h))}
	})
}

// vacuum analyzes the four tables and sets their visibility maps.
func vacuum(ctx context.Context, pool *pgxpool.Pool) error {
	// Fresh statistics, so the planner knows the new tenant's size at once,
	// and a visibility map, so counts are index-only scans from the first
	// request instead of after autovacuum gets round to it.
	for _, t := range []string{"contacts", "contact_emails", "contact_phones", "contact_addresses"} {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) contacts."+t); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	return nil
}

// canSkipChecks reports whether the role may switch off foreign-key
// triggers for its session.
func canSkipChecks(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var super bool
	if err := pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return false, fmt.Errorf("seed: read role: %w", err)
	}
	return super, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// copyRows streams n rows made by row into contacts.<table> with COPY, on
// a connection of its own (so a session setting never leaks into the
// pool).
func copyRows(ctx context.Context, pool *pgxpool.Pool, skipChecks bool, table string, columns []string, n int, row func(i int) []any) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if skipChecks {
		if _, err := conn.Exec(ctx, "SET session_replication_role = replica"); err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		r := row(i)
		i++
		return r, nil
	})
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"contacts", table}, columns, src); err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}
