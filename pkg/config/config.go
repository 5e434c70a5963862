// Package config reads configuration from environment variables, the way
// every Almoner process is configured (flags only override them).
package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Source looks configuration values up by variable name. Env reads the
// process environment; tests pass a map over it with Overlay so that
// parallel tests can run differently configured services.
type Source func(key string) string

// Env is the process environment.
var Env Source = os.Getenv

// Overlay returns a source that answers from m first, then from base.
func Overlay(m map[string]string, base Source) Source {
	return func(key string) string {
		if v, ok := m[key]; ok {
			return v
		}
		if base == nil {
			return ""
		}
		return base(key)
	}
}

// String returns the variable key, or def when unset or empty.
func (s Source) String(key, def string) string {
	if s == nil {
		s = Env
	}
	if v := strings.TrimSpace(s(key)); v != "" {
		return v
	}
	return def
}

// Duration returns the variable key parsed as a Go duration ("30s").
func (s Source) Duration(key string, def time.Duration) (time.Duration, error) {
	v := s.String(key, "")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 30s", key, v)
	}
	return d, nil
}

// Keep is what Retention returns for "off": keep the rows for good.
const Keep time.Duration = -1

// Retention returns the variable key read as how long rows are kept: a
// duration of at least least, or "off" (Keep).
func (s Source) Retention(key string, def, least time.Duration) (time.Duration, error) {
	if s.String(key, "") == "off" {
		return Keep, nil
	}
	d, err := s.Duration(key, def)
	if err != nil {
		return 0, err
	}
	if d < least {
		return 0, fmt.Errorf("%s: %s is less than %s; set at least %s, or off to keep the rows for good", key, d, least, least)
	}
	return d, nil
}

// Int returns the variable key parsed as a positive integer.
func (s Source) Int(key string, def int) (int, error) {
	v := s.String(key, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", key, v)
	}
	return n, nil
}

// Bool returns the variable key parsed as a boolean.
func (s Source) Bool(key string, def bool) (bool, error) {
	v := s.String(key, "")
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", key, v)
	}
	return b, nil
}

// String reads the process environment; see Source.String.
func String(key, def string) string { return Env.String(key, def) }

// Duration reads the process environment; see Source.Duration.
func Duration(key string, def time.Duration) (time.Duration, error) { return Env.Duration(key, def) }

// Int reads the process environment; see Source.Int.
func Int(key string, def int) (int, error) { return Env.Int(key, def) }

// Bool reads the process environment; see Source.Bool.
func Bool(key string, def bool) (bool, error) { return Env.Bool(key, def) }

// ServiceAddrVar is the variable that holds a service's gRPC address for
// the processes that call it: ALMONER_<SERVICE>_ADDR.
func ServiceAddrVar(service string) string {
	return "ALMONER_" + strings.ToUpper(service) + "_ADDR"
}
