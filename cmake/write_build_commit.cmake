# Writes OUTPUT, a header defining KERNLATHE_BUILD_COMMIT: the commit of SOURCE_DIR's checkout (12 hex digits, with
# "+changes" when tracked files differ from it), or "" outside a git checkout or without git. Run before every
# build (CMakeLists.txt, kernlathe_build_commit); the file is rewritten only when the value changes, so an unchanged
# checkout recompiles nothing.
set(commit "")
find_program(GIT_EXECUTABLE git)
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE head_result OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(head_result EQUAL 0)
    set(commit "${head}")
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT changes STREQUAL "")
      string(APPEND commit "+changes")
    endif()
  endif()
endif()
set(content "// Written by cmake/write_build_commit.cmake before each build: the commit the binaries are built from.\n#define KERNLATHE_BUILD_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL content)
  file(WRITE ${OUTPUT} "${content}")
endif()
