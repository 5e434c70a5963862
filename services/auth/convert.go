package auth

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/services/auth/store"
)

func toAPIKey(k store.APIKey) *authv1.ApiKey {
	return &authv1.ApiKey{
		Id:         k.ID.String(),
		Name:       k.Name,
		KeyPrefix:  k.KeyPrefix,
		Scopes:     k.Scopes,
		ExpiresAt:  optionalTime(k.ExpiresAt),
		LastUsedAt: optionalTime(k.LastUsedAt),
		CreatedAt:  timestamppb.New(k.CreatedAt),
	}
}

func toCreatedAPIKey(k store.APIKey, plain string) *authv1.CreatedApiKey {
	return &authv1.CreatedApiKey{
		Id:           k.ID.String(),
		Name:         k.Name,
		KeyPrefix:    k.KeyPrefix,
		PlainTextKey: plain,
		Scopes:       k.Scopes,
		ExpiresAt:    optionalTime(k.ExpiresAt),
	}
}

func toTenant(t store.Tenant) *authv1.Tenant {
	return &authv1.Tenant{
		Id:              t.ID.String(),
		Name:            t.Name,
		Slug:            t.Slug,
		Active:          t.Active,
		Features:        t.Features,
		DefaultCurrency: t.DefaultCurrency,
		CreatedAt:       timestamppb.New(t.CreatedAt),
		EventsSince:     optionalTime(t.EventsSince),
	}
}

func optionalTime(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func indexPath(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

func trimSpace(s string) string { return strings.TrimSpace(s) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
