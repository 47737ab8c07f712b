# DDP_CHECK_CFLAG(FLAG): append FLAG to DDP_CFLAGS if the C compiler accepts
# it without a warning.
AC_DEFUN([DDP_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  ddp_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS $1 -Werror"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); DDP_CFLAGS="$DDP_CFLAGS $1"],
    [AC_MSG_RESULT([no])])
  CFLAGS=$ddp_save_CFLAGS
])

# DDP_CHECK_LDFLAG(FLAG): append FLAG to DDP_LDFLAGS if the linker accepts it.
AC_DEFUN([DDP_CHECK_LDFLAG], [
  AC_MSG_CHECKING([whether the linker accepts $1])
  ddp_save_LDFLAGS=$LDFLAGS
  LDFLAGS="$LDFLAGS $1"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); DDP_LDFLAGS="$DDP_LDFLAGS $1"],
    [AC_MSG_RESULT([no])])
  LDFLAGS=$ddp_save_LDFLAGS
])

# DDP_CHECK_PTHREAD: find how to link POSIX threads (glibc: -pthread).
AC_DEFUN([DDP_CHECK_PTHREAD], [
  AC_MSG_CHECKING([for -pthread])
  ddp_save_LDFLAGS=$LDFLAGS
  LDFLAGS="$LDFLAGS -pthread"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <pthread.h>]], [[pthread_self();]])],
    [AC_MSG_RESULT([yes]); PTHREAD_CFLAGS=-pthread; PTHREAD_LIBS=-pthread],
    [AC_MSG_RESULT([no]); PTHREAD_CFLAGS=; PTHREAD_LIBS=-lpthread])
  LDFLAGS=$ddp_save_LDFLAGS
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
