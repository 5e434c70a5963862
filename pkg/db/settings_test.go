package db_test

import (
	"errors"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
)

func TestLoadSettings(t *testing.T) {
	const url, direct = "postgres://pgbouncer:6432/almoner", "postgres://server:5432/almoner"
	tests := []struct {
		name       string
		env        map[string]string
		wantErr    bool
		session    string
		sessionErr error
		lag        time.Duration
	}{
		{name: "defaults", env: nil, session: url, lag: db.DefaultReadMaxLag},
		{name: "transaction with direct", env: map[string]string{db.PoolModeVar: "transaction", db.DirectURLVar: direct}, session: direct, lag: db.DefaultReadMaxLag},
		{name: "transaction without direct", env: map[string]string{db.PoolModeVar: "transaction"}, sessionErr: db.ErrNoSession, lag: db.DefaultReadMaxLag},
		{name: "session with direct", env: map[string]string{db.DirectURLVar: direct}, session: direct, lag: db.DefaultReadMaxLag},
		{name: "lag", env: map[string]string{db.ReadMaxLagVar: "250ms"}, session: url, lag: 250 * time.Millisecond},
		{name: "bad mode", env: map[string]string{db.PoolModeVar: "statement"}, wantErr: true},
		{name: "bad lag", env: map[string]string{db.ReadMaxLagVar: "-1s"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := db.LoadSettings(config.Overlay(tc.env, nil), url)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			got, err := s.SessionURL()
			if !errors.Is(err, tc.sessionErr) || got != tc.session {
				t.Errorf("SessionURL = %q, %v; want %q, %v", got, err, tc.session, tc.sessionErr)
			}
			if s.ReadMaxLag != tc.lag {
				t.Errorf("ReadMaxLag = %v, want %v", s.ReadMaxLag, tc.lag)
			}
		})
	}
}
