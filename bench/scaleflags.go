package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// scaleCurveNames are the values of -scale-curves, in the order they run.
var scaleCurveNames = []string{"apps", "servers", "subscriptions", "size"}

// scaleOptions choose what the scale section measures, so that one point
// can be compared between two mcpd binaries without the whole section.
type scaleOptions struct {
	curves  map[string]bool // nil: every curve
	apps    []int           // the apps curve's points; nil: the default
	servers []int           // the servers curve's points; nil: the default
}

// runs reports whether the scale section measures curve.
func (s *scaleOptions) runs(curve string) bool { return s.curves == nil || s.curves[curve] }

// scaleFlags registers the scale section's flags; parse checks their
// values once fs has been parsed.
func scaleFlags(fs *flag.FlagSet, s *scaleOptions) (parse func() error) {
	curves := fs.String("scale-curves", "", "comma-separated `list` of the scale section's curves, of "+strings.Join(scaleCurveNames, ",")+" (default all)")
	apps := fs.String("scale-apps", "", "comma-separated `counts` of apps the apps curve measures (default 1,10,100,1000; smoke 1,10)")
	servers := fs.String("scale-servers", "", "comma-separated `counts` of configured servers the servers curve measures (default 10,100,500; smoke 10,100)")
	return func() error {
		if *curves != "" {
			s.curves = map[string]bool{}
			for _, c := range strings.Split(*curves, ",") {
				if !slices.Contains(scaleCurveNames, c) {
					return fmt.Errorf("unknown curve %q in -scale-curves (want some of %s)", c, strings.Join(scaleCurveNames, ","))
				}
				s.curves[c] = true
			}
		}
		var err error
		if s.apps, err = counts("-scale-apps", *apps); err != nil {
			return err
		}
		s.servers, err = counts("-scale-servers", *servers)
		return err
	}
}

// counts parses a comma-separated list of positive integers ("" is nil).
func counts(flagName, v string) ([]int, error) {
	if v == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}
