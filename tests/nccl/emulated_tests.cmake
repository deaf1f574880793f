# Included by tests/CMakeLists.txt (its scope and CMAKE_CURRENT_SOURCE_DIR: tests/).
# The NCCL backend's call sequence over the emulated NCCL (threads, host memory, NCCL's blocking
# semantics): tests/nccl/emulation comes first on the include path, so <nccl.h> is the emulation.
find_package(Threads REQUIRED)
add_executable(meshcast-tests-nccl-emulated test_main.cpp nccl/test_nccl_emulated.cpp nccl/test_nccl_failures.cpp
               nccl/test_nccl_nonblocking.cpp nccl/test_nccl_launch_order.cpp nccl/test_nccl_release.cpp)
target_include_directories(meshcast-tests-nccl-emulated BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/nccl/emulation)
target_include_directories(meshcast-tests-nccl-emulated PRIVATE ${PROJECT_SOURCE_DIR}/examples)
target_link_libraries(meshcast-tests-nccl-emulated PRIVATE meshcast::meshcast meshcast_build_flags doctest::doctest Threads::Threads)
add_test(NAME nccl.emulated COMMAND meshcast-tests-nccl-emulated)
set_tests_properties(nccl.emulated PROPERTIES TIMEOUT 300)
# A resharder's runs allocate nothing after the first (count_new.cpp replaces operator new; not
# under the sanitizers, whose runtime must own it).
if(NOT MESHCAST_SANITIZE)
  target_sources(meshcast-tests-nccl-emulated PRIVATE nccl/count_new.cpp)
  target_compile_definitions(meshcast-tests-nccl-emulated PRIVATE MESHCAST_TEST_COUNTS_NEW)
endif()
# The NCCL front end in compiled mode (MESHCAST_COMPILED_NCCL): libmeshcast-nccl's source built
# against the emulation, and nccl.emulated's front-end cases (one call, batches, misuse, bounded
# groups, benchmark jobs, release_staging) linked to it. Built from include/, as libmeshcast-nccl is.
if(TARGET meshcast_compiled_policies)
  add_library(meshcast-nccl-emulated-compiled STATIC ${PROJECT_SOURCE_DIR}/src/nccl.cpp)
  target_include_directories(meshcast-nccl-emulated-compiled BEFORE PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/nccl/emulation)
  target_include_directories(meshcast-nccl-emulated-compiled PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(meshcast-nccl-emulated-compiled PUBLIC MESHCAST_COMPILED_NCCL)
  target_compile_features(meshcast-nccl-emulated-compiled PUBLIC cxx_std_20)
  target_link_libraries(meshcast-nccl-emulated-compiled PUBLIC meshcast_compiled_policies meshcast_build_flags Threads::Threads)
  add_executable(meshcast-tests-nccl-emulated-compiled test_main.cpp nccl/test_nccl_emulated.cpp nccl/test_nccl_release.cpp)
  target_include_directories(meshcast-tests-nccl-emulated-compiled PRIVATE ${PROJECT_SOURCE_DIR}/examples)
  target_link_libraries(meshcast-tests-nccl-emulated-compiled PRIVATE meshcast-nccl-emulated-compiled doctest::doctest)
  if(NOT MESHCAST_SANITIZE)
    target_sources(meshcast-tests-nccl-emulated-compiled PRIVATE nccl/count_new.cpp)
    target_compile_definitions(meshcast-tests-nccl-emulated-compiled PRIVATE MESHCAST_TEST_COUNTS_NEW)
  endif()
  add_test(NAME nccl.emulated_compiled COMMAND meshcast-tests-nccl-emulated-compiled)
  set_tests_properties(nccl.emulated_compiled PROPERTIES TIMEOUT 300)
endif()
