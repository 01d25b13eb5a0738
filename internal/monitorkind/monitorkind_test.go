package monitorkind

import "testing"

func TestLabel(t *testing.T) {
	for _, c := range []struct{ kind, name, target, want string }{
		{Host, "", "", "host"},
		{Postgres, "", "postgres://db/app", "postgres"},
		{Postgres, "orders", "postgres://db/app", "postgres[orders]"},
		{Process, "", "nginx", "process[nginx]"},
		{Process, "web", "1234", "process[web]"},
	} {
		if got := Label(c.kind, c.name, c.target); got != c.want {
			t.Errorf("Label(%q, %q, %q) = %q, want %q", c.kind, c.name, c.target, got, c.want)
		}
	}
}

func TestKindsAreKindsAndFresh(t *testing.T) {
	ks := Kinds()
	for _, k := range ks {
		if !Is(k) {
			t.Errorf("Is(%q) = false for a listed kind", k)
		}
	}
	if Is("postgress") || Is("") || Is(Self) {
		t.Error("Is accepts a name that is no kind")
	}
	ks[0] = "changed"
	if Kinds()[0] != Postgres {
		t.Error("Kinds shares its slice between callers")
	}
}
