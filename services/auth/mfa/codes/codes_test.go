package codes

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// secret is RFC 6238's SHA-1 test key ("12345678901234567890") in base32.
const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

func TestStep(t *testing.T) {
	t.Parallel()
	// RFC 6238 appendix B: at 59 s the 8-digit code is 94287082, so the
	// 6-digit one is 287082, in step 1.
	at := time.Unix(59, 0)
	if got, _ := Code(secret, at); got != "287082" {
		t.Fatalf("RFC 6238 vector: got %s", got)
	}
	now := time.Unix(1_700_000_000, 0)
	cur := StepAt(now)
	code := func(d int64) string {
		c, err := Code(secret, now.Add(time.Duration(d)*Period))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		code     string
		lastStep int64
		want     int64
		err      error
	}{
		{"current step", code(0), 0, cur, nil},
		{"previous step (skew)", code(-1), 0, cur - 1, nil},
		{"next step (skew)", code(1), 0, cur + 1, nil},
		{"two steps back", code(-2), 0, 0, ErrWrong},
		{"two steps ahead", code(2), 0, 0, ErrWrong},
		{"replayed step", code(0), cur, 0, ErrReplayed},
		{"older than the last step", code(-1), cur, 0, ErrReplayed},
		{"newer than the last step", code(1), cur, cur + 1, nil},
		{"not digits", "12a456", 0, 0, ErrWrong},
		{"too short", "12345", 0, 0, ErrWrong},
		{"too long", code(0) + "1", 0, 0, ErrWrong},
		{"empty", "", 0, 0, ErrWrong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Step(secret, tc.code, now, tc.lastStep)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("Step(%q, last %d) = %d, %v; want %d, %v", tc.code, tc.lastStep, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	s, url, err := NewSecret("Almoner", "ada@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 32 || !strings.HasPrefix(url, "otpauth://totp/Almoner:ada@example.org?") || !strings.Contains(url, "secret="+s) {
		t.Errorf("secret %q url %q", s, url)
	}
	c, _ := Code(s, time.Now())
	if _, err := Step(s, c, time.Now(), 0); err != nil {
		t.Errorf("a code of a new secret: %v", err)
	}
}

func TestEmailCodes(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 20 {
		c := NewEmailCode()
		if !WellFormed(c) {
			t.Fatalf("email code %q", c)
		}
		seen[c] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 email codes, %d distinct", len(seen))
	}
	for _, tc := range []struct {
		name       string
		user, code string
		same       bool
	}{
		{"same user and code", "u1", "123456", true},
		{"other user", "u2", "123456", false},
		{"other code", "u1", "123457", false},
	} {
		if got := string(HashEmailCode(tc.user, tc.code)) == string(HashEmailCode("u1", "123456")); got != tc.same {
			t.Errorf("%s: same hash %v", tc.name, got)
		}
	}
}

func TestRecoveryCodes(t *testing.T) {
	t.Parallel()
	set := NewRecoveryCodes()
	if len(set) != RecoveryCount {
		t.Fatalf("%d codes", len(set))
	}
	seen := map[string]bool{}
	for _, c := range set {
		if len(c) != 11 || c[5] != '-' || seen[c] {
			t.Errorf("code %q (seen %v)", c, seen[c])
		}
		seen[c] = true
	}
	c := set[0]
	for _, tc := range []struct {
		name, typed string
		same        bool
	}{
		{"as shown", c, true},
		{"upper case", strings.ToUpper(c), true},
		{"without the hyphen", strings.ReplaceAll(c, "-", ""), true},
		{"with spaces", " " + strings.ReplaceAll(c, "-", " ") + " ", true},
		{"another code", set[1], false},
		{"empty", "", false},
	} {
		if got := string(HashRecovery(tc.typed)) == string(HashRecovery(c)); got != tc.same {
			t.Errorf("%s (%q): same hash %v", tc.name, tc.typed, got)
		}
	}
}
