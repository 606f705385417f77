package workflow

import (
	"strings"
	"unicode/utf8"
)

// MaxIDBytes is the largest id, in UTF-8 bytes, the store accepts (run, node,
// activation, dispatch identity, lease and authority strings).
const MaxIDBytes = 512

// ValidateID reports whether id is acceptable as the argument named field.
// An id is valid when it is valid UTF-8, contains no NUL byte, is 1 to 512
// bytes long and is not blank after trimming Unicode whitespace
// (unicode.IsSpace). Surrounding whitespace is kept: " x " is a valid id,
// distinct from "x". There is no other character-class restriction.
//
// The error is an *InputError matching ErrInvalidInput.
func ValidateID(field, id string) error {
	if len(id) == 0 || len(id) > MaxIDBytes {
		return invalid(field, "must contain 1 to %d bytes", MaxIDBytes)
	}
	if !utf8.ValidString(id) {
		return invalid(field, "must be valid UTF-8")
	}
	if strings.IndexByte(id, 0) >= 0 {
		return invalid(field, "must not contain a NUL byte")
	}
	if strings.TrimSpace(id) == "" {
		return invalid(field, "must contain 1 to %d bytes and not be blank", MaxIDBytes)
	}
	return nil
}
