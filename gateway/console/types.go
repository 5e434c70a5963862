package console

import "time"

// The API's bodies, as far as the pages read them (the published OpenAPI
// document is their contract).

type impersonation struct {
	ID            string    `json:"id"`
	TenantID      string    `json:"tenantId"`
	UserID        string    `json:"userId"`
	OperatorEmail string    `json:"operatorEmail"`
	Reason        string    `json:"reason"`
	StartedAt     time.Time `json:"startedAt"`
	ExpiresAt     time.Time `json:"expiresAt"`
	EndedAt       time.Time `json:"endedAt"`
	EndReason     string    `json:"endReason"`
}

type tenant struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Slug            string    `json:"slug"`
	Active          bool      `json:"active"`
	Features        []string  `json:"features"`
	DefaultCurrency string    `json:"defaultCurrency"`
	CreatedAt       time.Time `json:"createdAt"`
}

type user struct {
	ID           string    `json:"id"`
	Email        string    `json:"email"`
	FirstName    string    `json:"firstName"`
	LastName     string    `json:"lastName"`
	Role         string    `json:"role"`
	Status       string    `json:"status"`
	MfaEnabled   bool      `json:"mfaEnabled"`
	LastSignInAt time.Time `json:"lastSignInAt"`
}

type role struct {
	Name    string   `json:"name"`
	Scopes  []string `json:"scopes"`
	BuiltIn bool     `json:"builtIn"`
}

type apiKey struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	KeyPrefix    string    `json:"keyPrefix"`
	PlainTextKey string    `json:"plainTextKey"`
	Scopes       []string  `json:"scopes"`
	ExpiresAt    time.Time `json:"expiresAt"`
	LastUsedAt   time.Time `json:"lastUsedAt"`
	CreatedAt    time.Time `json:"createdAt"`
}

type webhook struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"eventTypes"`
	Description    string    `json:"description"`
	Active         bool      `json:"active"`
	DisabledReason string    `json:"disabledReason"`
	Secret         string    `json:"secret"`
	CreatedAt      time.Time `json:"createdAt"`
}

type eventType struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type delivery struct {
	ID            string    `json:"id"`
	DeliveryID    string    `json:"deliveryId"`
	EventID       string    `json:"eventId"`
	EventType     string    `json:"eventType"`
	AttemptNumber int       `json:"attemptNumber"`
	AttemptedAt   time.Time `json:"attemptedAt"`
	Success       bool      `json:"success"`
	StatusCode    *int      `json:"statusCode"`
	DurationMs    int64     `json:"durationMs"`
	Error         string    `json:"error"`
	Abandoned     bool      `json:"abandoned"`
}

type mfaState struct {
	Totp *struct {
		Enabled bool `json:"enabled"`
	} `json:"totp"`
	Email *struct {
		Enabled bool `json:"enabled"`
	} `json:"email"`
	RecoveryCodesLeft int `json:"recoveryCodesLeft"`
	TrustedDevices    int `json:"trustedDevices"`
}

type trustedDevice struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt"`
	UserAgent  string    `json:"userAgent"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

type sessionRow struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	UserAgent  string    `json:"userAgent"`
	Current    bool      `json:"current"`
}

// page envelopes (spec: items, totalCount, page, pageSize).
type envelope[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
}
