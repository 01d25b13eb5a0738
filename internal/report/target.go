package report

import "net/url"

// shownTarget hides a password in a target URL: results written before
// stampede took credentials out of the target still hold one, and a
// report is made to be shared.
func shownTarget(t string) string {
	u, err := url.Parse(t)
	if err != nil || u.User == nil {
		return t
	}
	return u.Redacted()
}
