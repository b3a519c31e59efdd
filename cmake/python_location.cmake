# Run by cmake --install: the installed package's _location.py names the
# folder the library was installed in (the prefix as given at install time;
# DESTDIR, a staging root, is not part of it).
foreach(v ADM_PY_SITEDIR ADM_PY_LIBDIR)
  if(IS_ABSOLUTE "${${v}}")
    set(${v}_FULL "${${v}}")
  else()
    set(${v}_FULL "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
string(REPLACE "\\" "\\\\" lib "${ADM_PY_LIBDIR_FULL}")
string(REPLACE "\"" "\\\"" lib "${lib}")
set(out "$ENV{DESTDIR}${ADM_PY_SITEDIR_FULL}/admit/_location.py")
message(STATUS "Installing: ${out}")
file(WRITE "${out}" "# written by cmake --install: the library this copy of admit loads\nLIBDIR = \"${lib}\"\n")
