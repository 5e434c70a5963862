package settings

import (
	"context"
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
)

// CodeCurrencyLocked is the 400 of a currency change once the tenant has
// an order: a rule about one property, which no retry changes (so not a
// 409).
const CodeCurrencyLocked = "TenantSettings.CurrencyLocked"

// Server serves TenantSettingsService.
type Server struct {
	authv1.UnimplementedTenantSettingsServiceServer
	store *Store
	// awaitCaches waits out the gateways' cache window after a change
	// that moved the validation epoch, so the next request carries it.
	awaitCaches func(context.Context)
}

// New returns the server on st.
func New(st *Store, awaitCaches func(context.Context)) *Server {
	return &Server{store: st, awaitCaches: awaitCaches}
}

// GetTenantSettings returns the tenant's settings.
func (s *Server) GetTenantSettings(ctx context.Context, req *authv1.GetTenantSettingsRequest) (*authv1.GetTenantSettingsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TenantSettingsManage)
	if err != nil {
		return nil, err
	}
	out, err := s.store.Get(ctx, p.Tenant())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Tenant")
	}
	if err != nil {
		return nil, err
	}
	return &authv1.GetTenantSettingsResponse{Settings: ToProto(out)}, nil
}

// UpdateTenantSettings changes the properties the request carries.
func (s *Server) UpdateTenantSettings(ctx context.Context, req *authv1.UpdateTenantSettingsRequest) (*authv1.UpdateTenantSettingsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TenantSettingsManage)
	if err != nil {
		return nil, err
	}
	patch, err := PatchFromProto(req)
	if err != nil {
		return nil, err
	}
	out, currencyMoved, err := s.store.Update(ctx, p.Tenant(), patch, p.Actor())
	switch {
	case errors.Is(err, ErrCurrencyLocked):
		return nil, apperr.FieldRule(CodeCurrencyLocked, "DefaultCurrency",
			"'DefaultCurrency' cannot change once the tenant has an order.")
	case errors.Is(err, db.ErrNotFound):
		return nil, apperr.NotFound("Tenant")
	case err != nil:
		return nil, err
	}
	if currencyMoved {
		s.awaitCaches(ctx)
	}
	return &authv1.UpdateTenantSettingsResponse{Settings: ToProto(out)}, nil
}

// ToProto is the settings' wire document.
func ToProto(s Settings) *authv1.TenantSettings {
	days := s.RecurringRetryDays
	if days == nil {
		days = []int32{}
	}
	out := &authv1.TenantSettings{DefaultCurrency: s.DefaultCurrency, FiscalYearStartMonth: s.FiscalYearStartMonth, TimeZone: s.TimeZone,
		RecurringRetryDays: days, DailyBatchCloseTime: s.DailyBatchCloseTime,
		ReceiptThreshold: &typev1.Decimal{Value: money.FormatMinor(s.ReceiptThresholdMinor, s.DefaultCurrency)}}
	if s.UpdatedAt != nil {
		out.UpdatedAt = timestamppb.New(*s.UpdatedAt)
	}
	return out
}
