package reports

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	_ "time/tzdata" // IANA names resolve wherever the binary runs
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/tenantsettings"
	"github.com/almoner/almoner/services/reports/store"
)

// Profile defaults: the reference system's market.
const (
	defaultCountry  = "US"
	defaultTimeZone = "America/New_York"
)

type profileServer struct {
	reportsv1.UnimplementedOrganizationProfileServiceServer
	s *Service
}

// GetOrganizationProfile answers the saved profile, or the defaults (empty
// fields, US, America/New_York) when the tenant has saved none, so that
// what GET returns can always be sent back with PUT.
func (x *profileServer) GetOrganizationProfile(ctx context.Context, req *reportsv1.GetOrganizationProfileRequest) (*reportsv1.GetOrganizationProfileResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TenantSettingsManage)
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	prof, err := x.s.profile(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetOrganizationProfileResponse{Profile: profileToProto(prof)}, nil
}

// UpdateOrganizationProfile validates and saves the whole profile.
func (x *profileServer) UpdateOrganizationProfile(ctx context.Context, req *reportsv1.UpdateOrganizationProfileRequest) (*reportsv1.UpdateOrganizationProfileResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TenantSettingsManage)
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	prof, err := profileFromProto(tenant, req.GetProfile())
	if err != nil {
		return nil, err
	}
	if prof.TimeZone, err = x.s.putTimeZone(ctx, p, req.GetProfile().GetTimeZone(), prof.TimeZone); err != nil {
		return nil, err
	}
	saved, err := x.s.store.PutProfile(ctx, prof, p.Actor())
	if err != nil {
		return nil, err
	}
	saved.TimeZone = prof.TimeZone
	return &reportsv1.UpdateOrganizationProfileResponse{Profile: profileToProto(saved)}, nil
}

// Zones is where a tenant's time zone lives: its tenant settings, which
// the auth service owns (docs/operators.md, "Tenant settings"). The
// profile shows and sets the same value.
type Zones interface {
	// TimeZone is the tenant's IANA time zone.
	TimeZone(ctx context.Context, tenant uuid.UUID) (string, error)
	// SetTimeZone changes it for the caller p (one tenant_settings.updated
	// row, naming p as the actor).
	SetTimeZone(ctx context.Context, p authctx.Principal, tz string) error
}

// GRPCZones is Zones over the auth service's TenantSettingsService, called
// outside any transaction.
type GRPCZones struct {
	Auth *service.Upstream
}

// TimeZone reads the tenant's settings with the reports service's own
// assertion (tenant-settings:manage, the scope the read needs).
func (g GRPCZones) TimeZone(ctx context.Context, tenant uuid.UUID) (string, error) {
	s, err := tenantsettings.Reader{Conn: g.Auth.Conn, Actor: "reports:calendar"}.Get(ctx, tenant.String())
	if err != nil {
		return "", fmt.Errorf("reports: read the time zone: %w", err)
	}
	return s.TimeZone, nil
}

// SetTimeZone puts {"timeZone"} to the tenant's settings as the caller,
// whose principal (holding tenant-settings:manage, which the profile's
// PUT needs) goes on.
func (g GRPCZones) SetTimeZone(ctx context.Context, p authctx.Principal, tz string) error {
	conn, err := g.Auth.Conn()
	if err != nil {
		return err
	}
	ctx = authctx.NewOutgoingContext(ctx, p)
	_, err = authv1.NewTenantSettingsServiceClient(conn).UpdateTenantSettings(ctx, &authv1.UpdateTenantSettingsRequest{TenantId: p.TenantID, TimeZone: &tz})
	return err
}

// putTimeZone sets the time zone a profile's PUT carries in the tenant
// settings, before the profile's own transaction, and returns the one in
// force. A body without one keeps the tenant's (the settings' PUT may have
// set it; a profile saved before would otherwise reset it). Without Zones
// (this module's tests) the profile keeps its own, defaulted as before.
func (s *Service) putTimeZone(ctx context.Context, p authctx.Principal, sent, defaulted string) (string, error) {
	if s.cfg.Zones == nil {
		return defaulted, nil
	}
	cur, err := s.cfg.Zones.TimeZone(ctx, p.Tenant())
	if err != nil {
		return "", err
	}
	sent = strings.TrimSpace(sent)
	if sent == "" || sent == cur {
		return cur, nil
	}
	if err := s.cfg.Zones.SetTimeZone(ctx, p, sent); err != nil {
		return "", err
	}
	return sent, nil
}

// profile reads the tenant's profile, the defaults when it has none, with
// the tenant settings' time zone (Zones; outside any transaction).
func (s *Service) profile(ctx context.Context, tenant uuid.UUID) (store.Profile, error) {
	prof, err := s.store.Profile(ctx, tenant)
	if errors.Is(err, db.ErrNotFound) {
		prof, err = store.Profile{TenantID: tenant, Country: defaultCountry, TimeZone: defaultTimeZone}, nil
	}
	if err != nil || s.cfg.Zones == nil {
		return prof, err
	}
	if prof.TimeZone, err = s.cfg.Zones.TimeZone(ctx, tenant); err != nil {
		return prof, err
	}
	return prof, nil
}

// Profile is profile for the rooms of the service (packing slips).
func (s *Service) Profile(ctx context.Context, tenant uuid.UUID) (store.Profile, error) {
	return s.profile(ctx, tenant)
}

// profileLimits are the longest values each text property takes, in
// characters.
var profileLimits = []struct {
	field string
	max   int
	get   func(*reportsv1.OrganizationProfile) string
}{
	{"LegalName", 200, (*reportsv1.OrganizationProfile).GetLegalName},
	{"TaxId", 50, (*reportsv1.OrganizationProfile).GetTaxId},
	{"Email", 254, (*reportsv1.OrganizationProfile).GetEmail},
	{"Phone", 50, (*reportsv1.OrganizationProfile).GetPhone},
	{"Website", 500, (*reportsv1.OrganizationProfile).GetWebsite},
	{"SignatoryName", 200, (*reportsv1.OrganizationProfile).GetSignatoryName},
	{"SignatoryTitle", 200, (*reportsv1.OrganizationProfile).GetSignatoryTitle},
	{"ReceiptFooter", 2000, (*reportsv1.OrganizationProfile).GetReceiptFooter},
}

// profileFromProto validates a profile body. Every property may be left
// empty here (a profile is saved as it is filled in); a receipt names the
// ones it still needs (Receipt.ProfileMissing).
func profileFromProto(tenant uuid.UUID, in *reportsv1.OrganizationProfile) (store.Profile, error) {
	var v apperr.Violations
	for _, l := range profileLimits {
		if n := utf8.RuneCountInString(l.get(in)); n > l.max {
			v.Add(l.field, "'%s' must be %d characters or fewer. You entered %d characters.", l.field, l.max, n)
		}
	}
	if e := in.GetEmail(); e != "" {
		if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
			v.Add("Email", "'Email' is not a valid email address.")
		}
	}
	country := strings.TrimSpace(in.GetCountry())
	if country == "" {
		country = defaultCountry
	}
	if !isCountryCode(country) {
		v.Add("Country", "'Country' must be an ISO 3166-1 alpha-2 code such as US.")
	}
	tz := strings.TrimSpace(in.GetTimeZone())
	if tz == "" {
		tz = defaultTimeZone
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		v.Add("TimeZone", "'TimeZone' must be an IANA time zone name such as America/New_York.")
	}
	addr := addressFromProto(in.GetAddress(), &v)
	if err := v.Err(); err != nil {
		return store.Profile{}, err
	}
	return store.Profile{TenantID: tenant, LegalName: strings.TrimSpace(in.GetLegalName()), TaxID: strings.TrimSpace(in.GetTaxId()),
		Address: addr, Email: in.GetEmail(), Phone: in.GetPhone(), Website: in.GetWebsite(), SignatoryName: in.GetSignatoryName(),
		SignatoryTitle: in.GetSignatoryTitle(), ReceiptFooter: in.GetReceiptFooter(), Country: country, TimeZone: tz}, nil
}

func addressFromProto(a *reportsv1.PostalAddress, v *apperr.Violations) store.Address {
	if a == nil {
		// A body without an address: the profile has none yet.
		a = &reportsv1.PostalAddress{}
	}
	out := store.Address{Line1: strings.TrimSpace(a.GetLine1()), Line2: a.Line2, City: a.City, StateProvince: a.StateProvince, PostalCode: a.PostalCode, Country: a.Country}
	for _, f := range []struct {
		field string
		val   *string
		max   int
	}{{"Address.Line1", &out.Line1, 200}, {"Address.Line2", a.Line2, 200}, {"Address.City", a.City, 100},
		{"Address.StateProvince", a.StateProvince, 100}, {"Address.PostalCode", a.PostalCode, 20}} {
		if f.val != nil && utf8.RuneCountInString(*f.val) > f.max {
			v.Add(f.field, "'%s' must be %d characters or fewer.", f.field[len("Address."):], f.max)
		}
	}
	if a.Country != nil && !isCountryCode(*a.Country) {
		v.Add("Address.Country", "'Country' must be an ISO 3166-1 alpha-2 code such as US.")
	}
	return out
}

// isCountryCode checks the shape of an ISO 3166-1 alpha-2 code: two
// capital letters.
func isCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}

func profileToProto(p store.Profile) *reportsv1.OrganizationProfile {
	out := &reportsv1.OrganizationProfile{LegalName: p.LegalName, TaxId: p.TaxID, Address: addressToProto(&p.Address), Email: p.Email,
		Phone: p.Phone, Website: p.Website, SignatoryName: p.SignatoryName, SignatoryTitle: p.SignatoryTitle,
		ReceiptFooter: p.ReceiptFooter, Country: p.Country, TimeZone: p.TimeZone}
	if !p.UpdatedAt.IsZero() {
		out.UpdatedAt = timestamppb.New(p.UpdatedAt)
	}
	return out
}

func addressToProto(a *store.Address) *reportsv1.PostalAddress {
	if a == nil {
		return nil
	}
	return &reportsv1.PostalAddress{Line1: a.Line1, Line2: a.Line2, City: a.City, StateProvince: a.StateProvince, PostalCode: a.PostalCode, Country: a.Country}
}

// missingProfileFields names what a document needs of the profile and the
// profile lacks.
func missingProfileFields(p store.Profile) error {
	var v []apperr.Violation
	for _, f := range []struct{ field, val string }{{"LegalName", p.LegalName}, {"TaxId", p.TaxID}, {"Address.Line1", p.Address.Line1}} {
		if f.val == "" {
			v = append(v, apperr.Violation{Field: f.field, Message: fmt.Sprintf("The organization profile has no '%s'; set it with PUT /organization-profile.", f.field)})
		}
	}
	if len(v) == 0 {
		return nil
	}
	return &apperr.Error{Kind: apperr.KindInvalid, Code: "Receipt.ProfileMissing", Message: "One or more validation errors occurred.", Violations: v}
}

// location is the profile's time zone (saved ones are valid; UTC should
// one ever fail to load).
func location(p store.Profile) *time.Location {
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}
