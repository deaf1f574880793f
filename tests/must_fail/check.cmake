# Compiles SOURCE with MESHCAST_MISUSE defined. Exits with an error (so that the WILL_FAIL test
# passes) only if compilation failed with the sentence given by the file's "// expect: " line, and
# the same file compiles without MESHCAST_MISUSE (so the failure is the misuse, not a typo).
file(STRINGS ${SOURCE} expect_line REGEX "^// expect: ")
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE clean_rc OUTPUT_VARIABLE clean_out ERROR_VARIABLE clean_out)
if(NOT clean_rc EQUAL 0)
  message("the control build (no misuse) failed; the test proves nothing:\n${clean_out}")
  return()
endif()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -DMESHCAST_MISUSE -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message("the misuse compiled; it must not")
  return()
endif()
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message("compilation failed, but without the sentence '${expected}':\n${out}")
  return()
endif()
message(FATAL_ERROR "compilation failed as expected: ${expected}")
