package mfa

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/auth/store"
)

// ListTrustedDevices lists the user's trusted browsers.
func (s *Server) ListTrustedDevices(ctx context.Context, _ *authv1.ListTrustedDevicesRequest) (*authv1.ListTrustedDevicesResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	list, err := s.d.Store.TrustedDevices(ctx, user, s.d.Now())
	if err != nil {
		return nil, err
	}
	out := &authv1.ListTrustedDevicesResponse{Devices: make([]*authv1.TrustedDevice, 0, len(list))}
	for _, d := range list {
		out.Devices = append(out.Devices, &authv1.TrustedDevice{Id: d.ID.String(), CreatedAt: timestamppb.New(d.CreatedAt),
			LastUsedAt: timestamppb.New(d.LastUsedAt), UserAgent: d.UserAgent, ExpiresAt: timestamppb.New(d.ExpiresAt)})
	}
	return out, nil
}

// DeleteTrustedDevice forgets one trusted browser.
func (s *Server) DeleteTrustedDevice(ctx context.Context, req *authv1.DeleteTrustedDeviceRequest) (*authv1.DeleteTrustedDeviceResponse, error) {
	id, err := uuid.Parse(req.GetDeviceId())
	if err != nil || id == uuid.Nil {
		return nil, apperr.NotFound("Trusted device")
	}
	if err := s.forget(ctx, id, store.ActionDeviceForgotten); err != nil {
		return nil, err
	}
	return &authv1.DeleteTrustedDeviceResponse{}, nil
}

// DeleteTrustedDevices forgets every trusted browser.
func (s *Server) DeleteTrustedDevices(ctx context.Context, _ *authv1.DeleteTrustedDevicesRequest) (*authv1.DeleteTrustedDevicesResponse, error) {
	if err := s.forget(ctx, uuid.Nil, store.ActionDevicesForgotten); err != nil {
		return nil, err
	}
	return &authv1.DeleteTrustedDevicesResponse{}, nil
}

func (s *Server) forget(ctx context.Context, id uuid.UUID, action string) error {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return err
	}
	err = s.d.Store.ForgetDevice(ctx, user, id, s.d.Log(ctx, user, action))
	if errors.Is(err, db.ErrNotFound) {
		return apperr.NotFound("Trusted device")
	}
	return err
}

// ListSecurityLog returns the user's security log, newest first.
func (s *Server) ListSecurityLog(ctx context.Context, _ *authv1.ListSecurityLogRequest) (*authv1.ListSecurityLogResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, err := s.d.Store.SecurityLog(ctx, user, securityLogSize)
	if err != nil {
		return nil, err
	}
	out := &authv1.ListSecurityLogResponse{Entries: make([]*authv1.SecurityLogEntry, 0, len(rows))}
	for _, r := range rows {
		out.Entries = append(out.Entries, &authv1.SecurityLogEntry{Id: r.ID.String(), Timestamp: timestamppb.New(r.At), Action: r.Action,
			IpAddress: r.IPAddress, UserAgent: r.UserAgent})
	}
	return out, nil
}
