package conf

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// describeQuery is passed to a Check to ask what it allows, so that a value
// of the wrong type ("abc" for an integer key) gets the same full
// explanation as an out-of-range one. The helpers in this file answer it
// with an allowed error; other Check functions need not know about it.
type describeQuery struct{}

// allowed is a Check's description of the values it accepts, such as
// "want an integer from 1 to 2047".
type allowed string

func (a allowed) Error() string { return string(a) }

// describe returns what check allows, if it is one of this file's helpers.
// A custom check may panic or fail on the query value; that is recovered
// and reported as no description.
func describe(check func(any) error) (desc string, ok bool) {
	if check == nil {
		return "", false
	}
	defer func() {
		if recover() != nil {
			desc, ok = "", false
		}
	}()
	a, ok := check(describeQuery{}).(allowed)
	return string(a), ok
}

// number is the set of parsed numeric value types a range check accepts.
type number interface {
	int | int64 | float64
}

// noun names the kind of number for messages.
func noun[T number]() string {
	var z T
	if _, ok := any(z).(float64); ok {
		return "a number"
	}
	return "an integer"
}

func format[T number](x T) string {
	switch v := any(x).(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(x)
}

// asNumber asserts v's type for a check.
func asNumber[T number](v any) (T, error) {
	x, ok := v.(T)
	if !ok {
		var z T
		return z, fmt.Errorf("range check for %T got a %T value", z, v)
	}
	return x, nil
}

// atLeast allows values >= lo.
func atLeast[T number](lo T) func(any) error {
	return func(v any) error {
		desc := allowed(fmt.Sprintf("want %s >= %s", noun[T](), format(lo)))
		if _, ok := v.(describeQuery); ok {
			return desc
		}
		x, err := asNumber[T](v)
		if err != nil {
			return err
		}
		if !(x >= lo) {
			return desc
		}
		return nil
	}
}

// between allows lo <= value <= hi.
func between[T number](lo, hi T) func(any) error {
	return func(v any) error {
		desc := allowed(fmt.Sprintf("want %s from %s to %s", noun[T](), format(lo), format(hi)))
		if _, ok := v.(describeQuery); ok {
			return desc
		}
		x, err := asNumber[T](v)
		if err != nil {
			return err
		}
		if !(x >= lo && x <= hi) {
			return desc
		}
		return nil
	}
}

// aboveUpTo allows lo < value <= hi.
func aboveUpTo[T number](lo, hi T) func(any) error {
	return func(v any) error {
		desc := allowed(fmt.Sprintf("want %s > %s and <= %s", noun[T](), format(lo), format(hi)))
		if _, ok := v.(describeQuery); ok {
			return desc
		}
		x, err := asNumber[T](v)
		if err != nil {
			return err
		}
		if !(x > lo && x <= hi) {
			return desc
		}
		return nil
	}
}

// OneOf is a Check for a String key that allows exactly the given
// strings (case-sensitive); its error lists them.
func OneOf(names ...string) func(any) error { return oneOf(names...) }

// OneOfFunc is a Check for a String key that allows exactly the strings
// names returns when the value is checked (case-sensitive), for a set
// that other packages extend as they register (the scheduling policies);
// its error lists them.
func OneOfFunc(names func() []string) func(any) error {
	return func(v any) error { return oneOf(names()...)(v) }
}

// oneOf allows exactly the given strings (case-sensitive).
func oneOf(names ...string) func(any) error {
	desc := allowed(fmt.Sprintf("want one of %s", strings.Join(names, ", ")))
	return func(v any) error {
		if _, ok := v.(describeQuery); ok {
			return desc
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("enum check got a %T value", v)
		}
		for _, a := range names {
			if s == a {
				return nil
			}
		}
		return desc
	}
}

// nonEmpty refuses an empty or all-blank string.
func nonEmpty(v any) error {
	const desc = allowed("want a non-empty string")
	if _, ok := v.(describeQuery); ok {
		return desc
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("non-empty check got a %T value", v)
	}
	if strings.TrimSpace(s) == "" {
		return desc
	}
	return nil
}

// hostPort allows "host:port" with a numeric port from 0 to 65535 (0 lets
// the system choose); the host may be empty (all interfaces / localhost).
func hostPort(v any) error {
	const want = `want host:port with a numeric port from 0 to 65535, such as "127.0.0.1:8021"`
	if _, ok := v.(describeQuery); ok {
		return allowed(want)
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("host:port check got a %T value", v)
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%s: port %q is not a number from 0 to 65535", want, port)
	}
	return nil
}
