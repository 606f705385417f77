package workflow

import "reflect"

// isNil reports whether v is nil or an interface value holding a nil
// pointer, map, slice, func or channel (a "typed nil"), which would panic
// when its methods are called.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// requireOwner rejects a nil or typed-nil Owner.
func requireOwner(o Owner) error {
	if isNil(o) {
		return invalid("owner", "must not be nil")
	}
	return nil
}
