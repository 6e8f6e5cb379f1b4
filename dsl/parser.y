%define api.pure full
%code { int yylex(void *lval); void yyerror(const char *s); }
%token DUMMY
%%
start: %empty ;
%%
