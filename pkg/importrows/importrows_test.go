package importrows

import (
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/config"
)

func TestRetention(t *testing.T) {
	for _, c := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", 720 * time.Hour, true},
		{"720h", 720 * time.Hour, true},
		{"24h", 24 * time.Hour, true},
		{"8760h", 8760 * time.Hour, true},
		{"  48h ", 48 * time.Hour, true},
		{"23h59m", 0, false},
		{"8761h", 0, false},
		{"720000h", 0, false},
		{"30d", 0, false},
		{"-720h", 0, false},
		{"0", 0, false},
		{"soon", 0, false},
	} {
		got, err := Retention(config.Overlay(map[string]string{Setting: c.value}, nil))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: got %v, %v; want %v (ok %v)", c.value, got, err, c.want, c.ok)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), Setting)) {
			t.Errorf("%q: error %v does not name the setting", c.value, err)
		}
	}
}
