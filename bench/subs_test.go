package main

import (
	"testing"
	"time"
)

func TestParseTouch(t *testing.T) {
	for _, tc := range []struct {
		params string
		sent   int64
		count  int64
		ok     bool
	}{
		{`{"uri":"demo://counter","_meta":{"mcpd.dev/sentUnixNano":1764470000123456789,"mcpd.dev/count":12}}`, 1764470000123456789, 12, true},
		{`{"_meta": {"mcpd.dev/count" : 7, "mcpd.dev/sentUnixNano":	-5}, "uri": "x"}`, -5, 7, true},
		// The key's text as a value first, then as a key.
		{`{"uri":"mcpd.dev/count","_meta":{"mcpd.dev/sentUnixNano":1,"mcpd.dev/count":2}}`, 1, 2, true},
		{`{"uri":"demo://counter","_meta":{"mcpd.dev/sentUnixNano":1}}`, 0, 0, false},
		{`{"_meta":{"mcpd.dev/sentUnixNano":"1","mcpd.dev/count":2}}`, 0, 0, false},
		{`{"_meta":{"mcpd.dev/sentUnixNano":99999999999999999999,"mcpd.dev/count":2}}`, 0, 0, false},
		{``, 0, 0, false},
	} {
		sent, count, err := parseTouch(tc.params)
		if (err == nil) != tc.ok {
			t.Errorf("parseTouch(%s): err %v, want ok %v", tc.params, err, tc.ok)
			continue
		}
		if tc.ok && (!sent.Equal(time.Unix(0, tc.sent)) || count != tc.count) {
			t.Errorf("parseTouch(%s) = %v, %d; want %d, %d", tc.params, sent.UnixNano(), count, tc.sent, tc.count)
		}
	}
}
