! use drx_mp: DRX-MP for Fortran, ISO_C_BINDING over drx/mp.h.
!
! The calls are the C ones with the same names and meanings: a handle is a
! type(c_ptr); coordinates are the array's (0-based, dimension 0 first, as
! in C), boxes [lo, hi); the communicator is a Fortran MPI handle (an
! integer, as MPI_COMM_WORLD of `use mpi`); strings are Fortran strings.
! A Fortran array z(n0, n1, ...) holding the box with its first index
! fastest is the box in order 'F'.  Results are 0 or a negative errno,
! the same on every rank for the collective calls; drx_mp_error() is the
! reason.
module drx_mp
  use, intrinsic :: iso_c_binding
  implicit none
  private
  integer(c_int), parameter :: DRX_MP_SYNC_EXTEND = 0, DRX_MP_SYNC_BATCH = 1, &
                                DRX_MP_SYNC_NONE = 2
  public :: drx_mp_create, drx_mp_open, drx_mp_close, drx_mp_rank, drx_mp_bounds, &
            drx_mp_zone, drx_mp_read_all, drx_mp_write_all, drx_mp_extend, drx_mp_error, &
            drx_mp_set_buffer, drx_mp_sync, drx_mp_set_sync, drx_mp_attr_set, &
            drx_mp_attr_rm, drx_mp_attr_get, drx_mp_elem_size, DRX_MP_SYNC_EXTEND, &
            DRX_MP_SYNC_BATCH, DRX_MP_SYNC_NONE, c_ptr, c_int, c_int64_t, c_size_t, c_double, &
            c_float, c_null_ptr

  interface
    function c_create(comm, path, type, k, kchunk, shape, chunk, dims, out) &
        bind(C, name='drx_mp_create_fk')
      import :: c_int, c_char, c_int64_t, c_ptr
      integer(c_int), value :: comm, k, kchunk
      character(kind=c_char), dimension(*), intent(in) :: path, type, dims
      integer(c_int64_t), dimension(*), intent(in) :: shape, chunk
      type(c_ptr), intent(out) :: out
      integer(c_int) :: c_create
    end function

    function c_open(comm, path, writable, out) bind(C, name='drx_mp_open_f')
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: comm, writable
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), intent(out) :: out
      integer(c_int) :: c_open
    end function

    function drx_mp_close(a) bind(C, name='drx_mp_close')
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: a
      integer(c_int) :: drx_mp_close
    end function

    function drx_mp_rank(a) bind(C, name='drx_mp_rank')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int) :: drx_mp_rank
    end function

    function drx_mp_bounds(a, bounds) bind(C, name='drx_mp_bounds')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: a
      integer(c_int64_t), dimension(*), intent(out) :: bounds
      integer(c_int) :: drx_mp_bounds
    end function

    function drx_mp_zone(a, proc, lo, hi) bind(C, name='drx_mp_zone')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: a
      integer(c_int), value :: proc
      integer(c_int64_t), dimension(*), intent(out) :: lo, hi
      integer(c_int) :: drx_mp_zone
    end function

    function drx_mp_read_all(a, lo, hi, order, buf) bind(C, name='drx_mp_read_all')
      import :: c_int, c_int64_t, c_ptr, c_char
      type(c_ptr), value :: a
      integer(c_int64_t), dimension(*), intent(in) :: lo, hi
      character(kind=c_char), value :: order
      type(*), dimension(*) :: buf
      integer(c_int) :: drx_mp_read_all
    end function

    function drx_mp_write_all(a, lo, hi, order, buf) bind(C, name='drx_mp_write_all')
      import :: c_int, c_int64_t, c_ptr, c_char
      type(c_ptr), value :: a
      integer(c_int64_t), dimension(*), intent(in) :: lo, hi
      character(kind=c_char), value :: order
      type(*), dimension(*), intent(in) :: buf
      integer(c_int) :: drx_mp_write_all
    end function

    function drx_mp_extend(a, dim, count) bind(C, name='drx_mp_extend')
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: a
      integer(c_int), value :: dim
      integer(c_int64_t), value :: count
      integer(c_int) :: drx_mp_extend
    end function

    function drx_mp_sync(a) bind(C, name='drx_mp_sync')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int) :: drx_mp_sync
    end function

    function drx_mp_set_sync(a, mode) bind(C, name='drx_mp_set_sync')
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int), value :: mode
      integer(c_int) :: drx_mp_set_sync
    end function

    function drx_mp_elem_size(a) bind(C, name='drx_mp_elem_size')
      import :: c_size_t, c_ptr
      type(c_ptr), value :: a
      integer(c_size_t) :: drx_mp_elem_size
    end function

    function drx_mp_set_buffer(a, bytes) bind(C, name='drx_mp_set_buffer')
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: a
      integer(c_size_t), value :: bytes
      integer(c_int) :: drx_mp_set_buffer
    end function

    function c_attr_set(a, name, type, value) bind(C, name='drx_mp_attr_set')
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: a
      character(kind=c_char), dimension(*), intent(in) :: name, type, value
      integer(c_int) :: c_attr_set
    end function

    function c_attr_rm(a, name) bind(C, name='drx_mp_attr_rm')
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: a
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int) :: c_attr_rm
    end function

    function c_attr_get(a, name, buf, size) bind(C, name='drx_mp_attr_get')
      import :: c_int, c_char, c_ptr, c_size_t
      type(c_ptr), value :: a
      character(kind=c_char), dimension(*), intent(in) :: name
      character(kind=c_char), dimension(*), intent(out) :: buf
      integer(c_size_t), value :: size
      integer(c_int) :: c_attr_get
    end function

    function c_error() bind(C, name='drx_mp_error')
      import :: c_ptr
      type(c_ptr) :: c_error
    end function

    function c_strlen(s) bind(C, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: c_strlen
    end function
  end interface

contains

  ! Collective.  shape and chunk have the rank's length; dims (optional)
  ! names the dimensions, 'time,y,x' (C's order: dimension 0 first).
  function drx_mp_create(comm, path, type, shape, chunk, a, dims) result(rc)
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path, type
    integer(c_int64_t), dimension(:), intent(in) :: shape, chunk
    type(c_ptr), intent(out) :: a
    character(len=*), intent(in), optional :: dims
    integer(c_int) :: rc
    ! shape and chunk of different lengths: -EINVAL (chunk was read past
    ! its end before 2026-12-07)
    if (present(dims)) then
      rc = c_create(int(comm, c_int), trim(path) // c_null_char, trim(type) // c_null_char, &
                    int(size(shape), c_int), int(size(chunk), c_int), shape, chunk, &
                    trim(dims) // c_null_char, a)
    else
      rc = c_create(int(comm, c_int), trim(path) // c_null_char, trim(type) // c_null_char, &
                    int(size(shape), c_int), int(size(chunk), c_int), shape, chunk, c_null_char, a)
    end if
  end function

  ! Collective.  writable: 0 or 1.
  function drx_mp_open(comm, path, writable, a) result(rc)
    integer, intent(in) :: comm, writable
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: a
    integer(c_int) :: rc
    rc = c_open(int(comm, c_int), trim(path) // c_null_char, int(writable, c_int), a)
  end function

  ! Collective.  Attribute name set to value: type '' or 'string' keeps
  ! the value as text (trailing blanks dropped, as Fortran pads), an
  ! element type ('f64', ...) parses numbers separated by commas.
  function drx_mp_attr_set(a, name, type, value) result(rc)
    type(c_ptr), intent(in) :: a
    character(len=*), intent(in) :: name, type, value
    integer(c_int) :: rc
    rc = c_attr_set(a, trim(name) // c_null_char, trim(type) // c_null_char, &
                    trim(value) // c_null_char)
  end function

  ! Collective.  Removes attribute name.
  function drx_mp_attr_rm(a, name) result(rc)
    type(c_ptr), intent(in) :: a
    character(len=*), intent(in) :: name
    integer(c_int) :: rc
    rc = c_attr_rm(a, trim(name) // c_null_char)
  end function

  ! Not collective.  Attribute name as text into value (blank-padded, cut
  ! when value is shorter); rc is the text's length or a negative errno.
  function drx_mp_attr_get(a, name, value) result(rc)
    type(c_ptr), intent(in) :: a
    character(len=*), intent(in) :: name
    character(len=*), intent(out) :: value
    integer(c_int) :: rc
    character(kind=c_char) :: buf(len(value) + 1)
    integer :: i
    rc = c_attr_get(a, trim(name) // c_null_char, buf, int(size(buf), c_size_t))
    value = ' '
    do i = 1, min(int(rc), len(value))
      value(i:i) = buf(i)
    end do
  end function

  ! The reason of this process's last failed call.
  function drx_mp_error() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), dimension(:), pointer :: p
    type(c_ptr) :: s
    integer :: i, n
    s = c_error()
    n = int(c_strlen(s))
    call c_f_pointer(s, p, [n])
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = p(i)
    end do
  end function
end module drx_mp
