package config

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bounds of duration values: a time.Duration holds at most maxDuration,
// that is maxDurationMs whole milliseconds (about 292 years).
const (
	maxDuration   = time.Duration(math.MaxInt64)
	maxDurationMs = math.MaxInt64 / int64(time.Millisecond)
)

// durationSyntax matches what time.ParseDuration accepts (an optional
// sign, then numbers each with a unit): a string it matches that still
// fails to parse is out of range.
var durationSyntax = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// duration accepts a Go duration string or a whole number of milliseconds,
// positive and no larger than a time.Duration holds.
func (p *parser) duration(server, key string, raw json.RawMessage, def time.Duration) time.Duration {
	switch Kind(raw) {
	case "string":
		s, _ := p.str(server, key, raw)
		d, err := time.ParseDuration(s)
		if err != nil {
			switch {
			case !durationSyntax.MatchString(s):
			case strings.HasPrefix(s, "-"):
				p.fail(server, key, "invalid duration %q: must be positive", s)
				return def
			default:
				p.fail(server, key, "invalid duration %q: too large (at most %s)", s, maxDuration)
				return def
			}
			p.fail(server, key, "invalid duration %q", s)
			return def
		}
		if d <= 0 {
			p.fail(server, key, "invalid duration %q: must be positive", s)
			return def
		}
		return d
	case "number":
		var n json.Number
		_ = json.Unmarshal(raw, &n)
		ms, err := n.Int64()
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				if strings.HasPrefix(n.String(), "-") {
					p.fail(server, key, "invalid duration %s: must be positive", n)
				} else {
					p.fail(server, key, "invalid duration %s: too large (at most %d ms)", n, maxDurationMs)
				}
				return def
			}
			p.fail(server, key, "invalid duration %s: a number is a whole count of milliseconds", n)
			return def
		}
		if ms <= 0 {
			p.fail(server, key, "invalid duration %s: must be positive", n)
			return def
		}
		if ms > maxDurationMs {
			p.fail(server, key, "invalid duration %s: too large (at most %d ms)", n, maxDurationMs)
			return def
		}
		return time.Duration(ms) * time.Millisecond
	default:
		p.fail(server, key, `want a duration (a string like "1.5s" or integer milliseconds), got %s`, Kind(raw))
		return def
	}
}
