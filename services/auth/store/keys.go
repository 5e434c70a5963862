package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// APIKey is a row of auth.api_keys.
type APIKey struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        string
	LookupID    string
	KeyPrefix   string
	KeyHash     []byte
	Environment string
	Scopes      []string
	ExpiresAt   *time.Time
	LastUsedAt  *time.Time
	CreatedAt   time.Time
}

const keyColumns = `tenant_id, id, name, lookup_id, key_prefix, key_hash, environment, scopes, expires_at, last_used_at, created_at`

func scanKey(row pgx.Row) (APIKey, error) {
	var k APIKey
	if err := row.Scan(&k.TenantID, &k.ID, &k.Name, &k.LookupID, &k.KeyPrefix, &k.KeyHash, &k.Environment, &k.Scopes, &k.ExpiresAt, &k.LastUsedAt, &k.CreatedAt); err != nil {
		return APIKey{}, fmt.Errorf("read api key: %w", db.Interpret(err))
	}
	return k, nil
}

// ErrKeyLimit is returned by CreateKey when the tenant already has as many
// active keys as the limit allows.
var ErrKeyLimit = errors.New("api key limit reached")

// CreateKey inserts k (ID is set here) and its audit row. With limit > 0 it
// refuses (ErrKeyLimit) when the tenant already has limit active keys:
// not revoked and not expired, the keys that can still authenticate.
func (s *Store) CreateKey(ctx context.Context, k APIKey, actor string, limit int) (APIKey, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return APIKey{}, fmt.Errorf("auth: create api key: %w", err)
	}
	var out APIKey
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if limit > 0 {
			if err := checkKeyLimit(ctx, tx, k.TenantID, limit); err != nil {
				return err
			}
		}
		out, err = scanKey(tx.QueryRow(ctx, `
			INSERT INTO auth.api_keys (tenant_id, id, name, lookup_id, key_prefix, key_hash, environment, scopes, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			RETURNING `+keyColumns,
			k.TenantID, id, k.Name, k.LookupID, k.KeyPrefix, k.KeyHash, k.Environment, k.Scopes, k.ExpiresAt))
		if err != nil {
			return fmt.Errorf("insert api key: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: k.TenantID.String(), EntityType: "ApiKey", EntityID: id.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if errors.Is(db.Interpret(err), db.ErrForeignKey) {
		// The tenant does not exist.
		return APIKey{}, fmt.Errorf("auth: create api key: tenant %s: %w: %w", k.TenantID, db.ErrNotFound, err)
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("auth: create api key: %w", err)
	}
	return out, nil
}

// checkKeyLimit fails with ErrKeyLimit when the tenant has limit active
// keys. Creations for one tenant queue on the tenant's row lock, held to the
// end of the transaction, so two of them at limit-1 cannot both pass. The
// count is a statement of its own on purpose: under READ COMMITTED each
// statement sees what committed before it began, so counting after the
// lock is granted sees the key the previous holder inserted; a count in the
// locking statement would use the snapshot from before the wait.
func checkKeyLimit(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, limit int) error {
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1 FROM auth.tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID).Scan(&one); err != nil {
		return fmt.Errorf("lock tenant %s: %w", tenantID, db.Interpret(err))
	}
	var n int
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FROM auth.api_keys
		WHERE tenant_id = $1 AND active AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
		tenantID).Scan(&n); err != nil {
		return fmt.Errorf("count active api keys: %w", err)
	}
	if n >= limit {
		return fmt.Errorf("%d active api keys: %w", n, ErrKeyLimit)
	}
	return nil
}

// GetKey reads one key of the tenant, revoked or not; db.ErrNotFound when
// the tenant has no key with id.
func (s *Store) GetKey(ctx context.Context, tenantID, id uuid.UUID) (key APIKey, revoked bool, err error) {
	var deletedAt *time.Time
	err = s.pool.QueryRow(ctx, `SELECT `+keyColumns+`, deleted_at FROM auth.api_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id).Scan(
		&key.TenantID, &key.ID, &key.Name, &key.LookupID, &key.KeyPrefix, &key.KeyHash, &key.Environment, &key.Scopes,
		&key.ExpiresAt, &key.LastUsedAt, &key.CreatedAt, &deletedAt)
	if err != nil {
		return APIKey{}, false, fmt.Errorf("auth: get api key %s: %w", id, db.Interpret(err))
	}
	return key, deletedAt != nil, nil
}

// ListKeys returns the tenant's keys that are not revoked, newest first.
func (s *Store) ListKeys(ctx context.Context, tenantID uuid.UUID) ([]APIKey, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+keyColumns+` FROM auth.api_keys
		WHERE tenant_id = $1 AND deleted_at IS NULL
		ORDER BY created_at DESC, id DESC`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("auth: list api keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIKey, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("auth: list api keys: %w", err)
	}
	return keys, nil
}

// RevokeKey deactivates and soft-deletes a key and records it.
func (s *Store) RevokeKey(ctx context.Context, tenantID, id uuid.UUID, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE auth.api_keys SET active = false, deleted_at = now()
			WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
		if err != nil {
			return fmt.Errorf("mark api key revoked: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: "ApiKey", EntityID: id.String(), Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("auth: revoke api key %s: %w", id, err)
	}
	return nil
}

// Credential is everything key validation needs, in one row.
type Credential struct {
	TenantID      uuid.UUID
	KeyID         uuid.UUID
	KeyPrefix     string
	KeyHash       []byte
	Environment   string
	Scopes        []string
	ExpiresAt     *time.Time
	KeyUsable     bool
	TenantActive  bool
	TenantFeature []string
	// TenantCurrency is the tenant's default currency, which the principal
	// carries to the services.
	TenantCurrency string
}

// CredentialByLookup reads the key with lookupID and its tenant's state.
func (s *Store) CredentialByLookup(ctx context.Context, lookupID string) (Credential, error) {
	var c Credential
	err := s.pool.QueryRow(ctx, `
		SELECT k.tenant_id, k.id, k.key_prefix, k.key_hash, k.environment, k.scopes, k.expires_at,
		       k.active AND k.deleted_at IS NULL, t.active, t.features, t.default_currency
		FROM auth.api_keys k JOIN auth.tenants t ON t.id = k.tenant_id
		WHERE k.lookup_id = $1`, lookupID).Scan(
		&c.TenantID, &c.KeyID, &c.KeyPrefix, &c.KeyHash, &c.Environment, &c.Scopes, &c.ExpiresAt,
		&c.KeyUsable, &c.TenantActive, &c.TenantFeature, &c.TenantCurrency)
	if err != nil {
		return Credential{}, fmt.Errorf("auth: read credential: %w", db.Interpret(err))
	}
	return c, nil
}

// KeyUse is one key's latest use, for TouchKeys.
type KeyUse struct {
	TenantID uuid.UUID
	KeyID    uuid.UUID
	At       time.Time
}

// TouchKeys moves last_used_at forward for many keys in one statement. It
// never moves a value backwards, so replicas flushing out of order agree.
// The rows are locked in key order first (uses come in a tracker's map
// order): two replicas' flushes locking the same keys in opposite orders
// deadlocked.
func (s *Store) TouchKeys(ctx context.Context, uses []KeyUse) error {
	if len(uses) == 0 {
		return nil
	}
	tenants := make([]uuid.UUID, len(uses))
	ids := make([]uuid.UUID, len(uses))
	ats := make([]time.Time, len(uses))
	for i, u := range uses {
		tenants[i], ids[i], ats[i] = u.TenantID, u.KeyID, u.At
	}
	_, err := s.pool.Exec(ctx, `
		WITH u AS MATERIALIZED (
			SELECT k.tenant_id, k.id, u.at FROM auth.api_keys k
			JOIN unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS u(tenant_id, id, at) ON k.tenant_id = u.tenant_id AND k.id = u.id
			WHERE k.last_used_at IS NULL OR k.last_used_at < u.at
			ORDER BY k.tenant_id, k.id
			FOR NO KEY UPDATE OF k
		)
		UPDATE auth.api_keys k SET last_used_at = u.at FROM u
		WHERE k.tenant_id = u.tenant_id AND k.id = u.id
		  AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, tenants, ids, ats)
	if err != nil {
		return fmt.Errorf("auth: touch api keys: %w", err)
	}
	return nil
}
