# Writes OUT, a header defining ADM_GIT_COMMIT: the short commit of the
# checkout at SRC, with "-dirty" where tracked files differ from it. Run
# at every build (the admit_commit_stamp target); OUT is rewritten only
# when its text changes, so a build at the same commit and state
# recompiles nothing. Outside a git checkout (a copied tree) an existing
# OUT is left as the last build in a checkout wrote it; with none, the
# header defines nothing and the reports say "unknown (set ADMIT_COMMIT)".
# Usage: cmake -DSRC=dir -DOUT=file -P commit_stamp.cmake
set(ENV{GIT_OPTIONAL_LOCKS} 0) # git status must never take the index lock from a user's command
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  if(NOT EXISTS ${OUT})
    file(WRITE ${OUT} "/* not a git checkout when built: no commit stamp */\n")
  endif()
  return()
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE changes ERROR_QUIET)
if(NOT rc EQUAL 0 OR NOT changes STREQUAL "")
  string(APPEND commit "-dirty")
endif()
set(text "/* written by cmake/commit_stamp.cmake at build time */\n#define ADM_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
