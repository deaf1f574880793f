# Compiles SOURCE with MESHCAST_MISUSE defined. Exits with an error (so that the WILL_FAIL test
# passes) only if compilation failed with the sentence given by the file's "// expect: " line, and
# the same file compiles without MESHCAST_MISUSE (so the failure is the misuse, not a typo). A
# "// errors: N" line also requires exactly N "error:" lines (a sentence followed by follow-on
# errors buries it).
#
# Each file includes only the header it tests (issue 22). single_include/ has only the layered
# paths of the headers that have a single file of their own: where the tested header is not
# there, the file is compiled with that include turned into the umbrella's, which amalgamates it.
get_filename_component(source_dir ${SOURCE} DIRECTORY)  # its helpers (quiet_backend.hpp), wherever it is compiled from
file(STRINGS ${SOURCE} expect_line REGEX "^// expect: ")
file(STRINGS ${SOURCE} include_lines REGEX "^#include <meshcast/")
file(READ ${SOURCE} text)
set(rewritten FALSE)
foreach(line IN LISTS include_lines)
  string(REGEX REPLACE "^#include <([^>]*)>.*" "\\1" header "${line}")
  if(NOT EXISTS ${INCLUDE}/${header})
    string(REPLACE "<${header}>" "<meshcast/meshcast.hpp>" text "${text}")
    set(rewritten TRUE)
  endif()
endforeach()
if(rewritten)
  get_filename_component(name ${SOURCE} NAME)
  set(SOURCE ${CMAKE_CURRENT_BINARY_DIR}/must_fail_single_include_${name})
  file(WRITE ${SOURCE} "${text}")
endif()
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")
if(expected STREQUAL "")  # an empty sentence is found in any output: every compile error would pass
  message("${SOURCE} has no '// expect: ' line naming the sentence its misuse must fail with")
  return()
endif()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} -I${source_dir} ${SOURCE}
  RESULT_VARIABLE clean_rc OUTPUT_VARIABLE clean_out ERROR_VARIABLE clean_out)
if(NOT clean_rc EQUAL 0)
  message("the control build (no misuse) failed; the test proves nothing:\n${clean_out}")
  return()
endif()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -DMESHCAST_MISUSE -I${INCLUDE} -I${source_dir} ${SOURCE}
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
file(STRINGS ${SOURCE} errors_line REGEX "^// errors: ")
if(NOT errors_line STREQUAL "")
  string(REGEX REPLACE "^// errors: " "" wanted_errors "${errors_line}")
  string(REGEX MATCHALL "error: " error_hits "${out}")
  list(LENGTH error_hits error_count)
  if(NOT error_count EQUAL wanted_errors)
    message("compilation failed with the sentence, but with ${error_count} errors, not ${wanted_errors}:\n${out}")
    return()
  endif()
endif()
message(FATAL_ERROR "compilation failed as expected: ${expected}")
